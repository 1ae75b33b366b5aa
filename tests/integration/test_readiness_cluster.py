"""Failure readiness against reality (issue 30, item 4), on a cluster of its own (4 brokers on
two racks, nothing of other tests on it): the leading manager's sweep predicts each broker's
loss; killing a broker it called healable gets that broker's replicas fully replicated
elsewhere within the estimated time, and killing one it called not healable - a member of an
isolation group with no spare broker - gives exactly the partial heal it predicted, naming the
same partitions.

The estimate counts from the loss as the manager sees it (the broker gone from the metadata,
which the registration watch reports at once), not from the SIGKILL: the controller's fencing
time is the cluster's setting, not kmedic's. The heal must take at most TOLERANCE times the
estimate, and the estimate be at most TOLERANCE + 1 times what the heal took (an estimate far
too long would pass the first check and tell on-call nothing).
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]
from helpers import create_placed_topic, kafka_conf, kmedic_process, read_audit, scrape, wait_for

from composition.pipeline import Pipeline
from kmedic.localcluster import ClusterSpec, LocalCluster, process
from manager.audit.log import AuditRecord

pytestmark = pytest.mark.integration

GRACE_S = 3
TOLERANCE = 2.0
PAIR = (1, 2)  # the isolation group's brokers: no spare between them
HEALABLE = 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    started = LocalCluster.start(
        ClusterSpec(brokers=4, racks=("/r1", "/r2")), tmp_path_factory.mktemp("ready")
    )
    yield started
    started.stop()


def placement(bootstrap: str) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
    topics = AdminClient(kafka_conf(bootstrap)).list_topics(timeout=10).topics
    return {
        (name, p.id): (list(p.replicas), list(p.isrs))
        for name, meta in topics.items()
        for p in meta.partitions.values()
    }


def fully_replicated_without(bootstrap: str, broker: int) -> bool:
    return all(
        broker not in replicas and sorted(isr) == sorted(replicas)
        for replicas, isr in placement(bootstrap).values()
    )


def prediction(port: int, since_s: float) -> dict[str, dict[str, Any]] | None:
    """Each broker's verdict from the leader's newest sweep that ended after ``since_s``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status.json", timeout=10) as page:
            ready = json.loads(page.read())["readiness"]
    except OSError:
        return None
    if not ready or ready["swept_at_ms"] < since_s * 1000:
        return None
    return {v["name"]: v for v in ready["scenarios"] if v["scenario"] == "broker"}


def named(reasons: list[dict[str, str]]) -> set[str]:
    """The partitions a partial heal's reasons name (each starts with ``topic:partition``)."""
    return {r["message"].split(" ", 1)[0].rstrip(":") for r in reasons}


def test_the_sweep_predicts_the_heal_time_and_the_partial_heal(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap_servers
    name = f"ready-{uuid.uuid4().hex[:6]}"
    rack = {b: cluster.rack(b) for b in cluster.broker_ids}
    assert rack[PAIR[0]] != rack[PAIR[1]], "the pair spans both racks"
    # Data on every broker (each partition on both racks), and the isolated topic on the pair.
    spread = [[b, c] for b in cluster.broker_ids for c in cluster.broker_ids if rack[b] < rack[c]]
    create_placed_topic(bootstrap, f"{name}.spread", spread)
    isolated = f"{name}.isolated"
    create_placed_topic(bootstrap, isolated, [list(PAIR), list(reversed(PAIR))])
    at = ["--zk", cluster.zk_connect, "--cluster", name]
    pair = ",".join(map(str, PAIR))
    for args in (
        ["groups", "broker", "create", "pair", "--brokers", pair],
        ["groups", "isolation", "create", "iso", "--topics", isolated, "--primary", "pair"],
    ):
        done = kmedic_process(*args, *at, timeout=60)
        assert done.returncode == 0, done.stderr
    port = process.free_ports(1)[0]
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    try:
        pipeline.start_agents(interval_s=2)
        pipeline.start_manager(
            interval_s=2,
            policy={
                "dead_grace_ms": GRACE_S * 1000,
                "min_valid_load_fraction": 0.0,  # no Spark job here
                "even_spread": False,
            },
            readiness={"first_sweep_s": 0, "period_s": 2, "cpu_share": 1.0},
            http={"port": port},
        )
        wait_for(
            lambda: pipeline.check_running() or scrape(port, "kmedic_is_leader") == 1,
            timeout=60,
            what="the manager to lead",
        )

        # A broker the sweep calls healable: healed within its estimate.
        leading = time.time()
        before = wait_for(lambda: prediction(port, leading), timeout=60, what="a readiness sweep")
        healable = before[str(HEALABLE)]
        assert healable["healable"], healable
        estimate_s = healable["heal_s"]
        cluster.kill(HEALABLE)
        wait_for(
            lambda: (
                HEALABLE not in AdminClient(kafka_conf(bootstrap)).list_topics(timeout=10).brokers
            ),
            timeout=60,
            interval=0.2,
            what=f"broker {HEALABLE} gone from the metadata",
        )
        seen_dead = time.monotonic()
        wait_for(
            lambda: fully_replicated_without(bootstrap, HEALABLE),
            timeout=estimate_s * TOLERANCE + 60,
            interval=0.5,
            what=f"broker {HEALABLE}'s replicas fully replicated elsewhere",
        )
        took_s = time.monotonic() - seen_dead
        print(
            f"broker {HEALABLE}: {healable['moves']} moves, estimated {estimate_s:.1f} s, "
            f"fully replicated in {took_s:.1f} s"
        )
        assert took_s <= estimate_s * TOLERANCE, (took_s, healable["sentence"])
        assert estimate_s <= took_s * (TOLERANCE + 1), (took_s, healable["sentence"])

        # Back (empty), then a broker of the pair: exactly the partial heal predicted.
        cluster.restart(HEALABLE)
        wait_for(
            lambda: (
                scrape(port, "kmedic_dead_brokers") == 0
                and scrape(port, "kmedic_moves_in_flight") in (0, None)
            ),
            timeout=60,
            what=f"broker {HEALABLE} back and no move left",
        )
        back = time.time()
        victim = PAIR[0]
        now = wait_for(lambda: prediction(port, back), timeout=60, what="a sweep after the heal")
        predicted = now[str(victim)]
        assert not predicted["healable"] and predicted["outcome"] == "act", predicted
        left = named(predicted["why"])
        assert left == {f"{isolated}:0", f"{isolated}:1"}, predicted["why"]
        killed_ms = int(time.time() * 1000)
        cluster.kill(victim)

        def partial_heal() -> AuditRecord | None:
            pipeline.check_running()
            for r in read_audit(bootstrap, "kmedic.actions"):
                if r.kind == "decision" and r.time_ms >= killed_ms and r.summary.startswith("act"):
                    return r
            return None

        decided = wait_for(partial_heal, timeout=90, interval=1, what="the partial heal decided")
        unhealed = [r.split(": ", 2) for r in decided.reasons if r.startswith("unhealed: ")]
        said = [{"code": code, "message": message} for _, code, message in unhealed]
        assert named(said) == left, decided.reasons
        assert {r["code"] for r in said} == {r["code"] for r in predicted["why"]}
        assert not set(decided.partitions) & left  # and the rest is healed
        assert decided.partitions
    finally:
        pipeline.stop()
