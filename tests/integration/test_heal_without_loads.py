"""A heal never waits for the load pipeline: with the Spark job not running and its loads topic
holding only records an hour old (what a job that stopped leaves behind), agents and the
manager as processes heal a SIGKILLed broker on the real cluster, and the decision says it
placed replicas by size and count because the loads are stale. The executor is event-driven:
with a long cycle and one move per broker, each move starts moments after one completes."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from helpers import (
    healed_off,
    kafka_conf,
    placed_for_a_heal,
    read_audit,
    scrape,
    wait_for,
    wait_until_usable,
)

from composition.pipeline import Pipeline
from kmedic.localcluster import process
from manager.audit.log import AuditRecord

pytestmark = pytest.mark.integration

PARTITIONS = 4
HOUR_MS = 3_600_000
# Two cycles after the heal: the one right after it is the one that paged (issue 25).
WATCH_S = 20
CYCLE_S = 10
POLL_GAP_MS = 3_000  # a completion seen (poll every 0.5 s), the next batch written and started


def loads_stale(port: int) -> bool:
    valid = scrape(port, "kmedic_load_data_valid_fraction")
    return valid is not None and valid < 0.9


def write_stale_loads(bootstrap: str, loads_topic: str, topic: str) -> None:
    """Replica-load records as a Spark job that stopped an hour ago left them."""
    producer = Producer(kafka_conf(bootstrap, {"acks": "all"}))
    old = int(time.time() * 1000) - HOUR_MS
    for p in range(PARTITIONS):
        record = {
            "topic": topic,
            "partition": p,
            "bytes_in_per_s": 50_000.0,
            "bytes_out_per_s": 50_000.0,
            "messages_in_per_s": 50.0,
            "last_report_ms": old,
            "samples": 10,
        }
        producer.produce(loads_topic, key=f"{topic}:{p}".encode(), value=json.dumps(record))
    assert producer.flush(30) == 0


def test_a_dead_broker_is_healed_while_the_load_pipeline_is_down(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    name = f"noloads-{uuid.uuid4().hex[:6]}"
    topic = f"{name}.rf2"
    topics = {
        "brokerstats": f"kmedic.brokerstats.{name}",
        "replica_loads": f"kmedic.replica-loads.{name}",
        "broker_loads": f"kmedic.broker-loads.{name}",
        "actions": f"kmedic.actions.{name}",
    }
    admin = AdminClient(kafka_conf(bootstrap))
    for future in admin.create_topics([NewTopic(topics["replica_loads"], 1, 3)]).values():
        future.result(timeout=30)
    victim = placed_for_a_heal(bootstrap, topic, PARTITIONS, cluster.rack)
    wait_until_usable(bootstrap, [topic, topics["replica_loads"]])
    write_stale_loads(bootstrap, topics["replica_loads"], topic)
    port = process.free_ports(1)[0]
    pipeline = Pipeline(cluster, tmp_path, cluster_name=name)
    try:
        pipeline.start_agents(interval_s=2, topic=topics["brokerstats"])
        pipeline.start_manager(
            # A long cycle, one move per broker: a move that starts well before the next cycle
            # was started by the executor's poll, the moment an earlier one completed.
            interval_s=CYCLE_S,
            topics=topics,
            policy={
                "dead_grace_ms": 3000,
                "max_dead_brokers": 1,
                "even_spread": False,  # the shared cluster is not this test's to even out
                # Every replica the dead broker held moves, the session's other tests' too.
                "max_moves_per_cycle": 10_000,
                "max_moves_per_hour": 100_000,
            },
            executor={"max_moves_per_broker": 1, "max_moves_in_flight": 3},
            http={"port": port},
        )
        wait_for(
            lambda: pipeline.check_running() or scrape(port, "kmedic_is_leader") == 1,
            timeout=60,
            what="the manager to lead",
        )
        # No Spark job runs: the manager sees agents' stats but only stale loads.
        wait_for(
            lambda: loads_stale(port), timeout=60, what="the manager to see the loads as stale"
        )
        cluster.kill(victim)

        def healed() -> bool:
            pipeline.check_running()
            return healed_off(bootstrap, topic, victim)

        wait_for(healed, timeout=180, interval=2, what=f"{topic} healed off broker {victim}")

        def heal_decision() -> list[AuditRecord]:
            return [
                r
                for r in read_audit(bootstrap, topics["actions"])
                if r.kind == "decision" and r.summary.startswith("act: heal")
            ]

        acts = wait_for(heal_decision, timeout=60, interval=2, what="the heal in the audit log")
        reasons = acts[0].reasons
        assert any(r.startswith("heal_without_loads:") for r in reasons), reasons
        assert not any(r.startswith("stale_load_data:") for r in reasons), reasons
        # The stale loads stay visible to the alert (KmedicStaleLoadData reads the load age).
        assert loads_stale(port)
        # Event-driven: after the first batch, every move started within seconds of a
        # completion, not a cycle (CYCLE_S) later. A move's end is audited once the stored
        # plan no longer lists it (manager.daemon.move_report), after the plan write that
        # starts the next move: its record may come a few ms after that start's.
        moves = read_audit(bootstrap, topics["actions"])
        done = sorted(r.time_ms for r in moves if r.kind == "action_completed")
        started = sorted(r.time_ms for r in moves if r.kind == "action_started")
        assert len(started) > 3, [r.summary for r in moves]
        later = [t for t in started if t > started[0] + 1000]
        late = [t for t in later if not any(abs(t - c) <= POLL_GAP_MS for c in done)]
        assert later and not late, (started, done)
        # Healed, with the job still down: nothing pages. The stale loads hold back
        # balancing only (their own warning reads the load age); the dead broker holds
        # nothing, so nothing is refusing to heal (both paged after every heal before).
        wait_for(
            lambda: scrape(port, "kmedic_moves_in_flight") == 0,
            timeout=120,
            what="every move of the heal to complete",
        )
        healed_at = time.monotonic()
        refusals = scrape(port, "kmedic_decisions_total", outcome="refuse") or 0.0
        cycles = sum(
            scrape(port, "kmedic_decisions_total", outcome=o) or 0.0
            for o in ("act", "noop", "wait", "refuse")
        )
        # The next WATCH_S of cycles after the heal (issue 25: the cycle after a heal refused
        # on a lagging metadata view and paged): every one a noop or a wait, no alert raised.
        wait_for(
            lambda: (
                time.monotonic() - healed_at >= WATCH_S
                and sum(
                    scrape(port, "kmedic_decisions_total", outcome=o) or 0.0
                    for o in ("act", "noop", "wait", "refuse")
                )
                >= cycles + WATCH_S // CYCLE_S - 1
                and scrape(port, "kmedic_last_decision", outcome="noop") == 1
            ),
            timeout=WATCH_S + 3 * CYCLE_S + 30,
            interval=2,
            what=f"{WATCH_S} s of cycles after the heal, the last one quiet",
        )
        assert (scrape(port, "kmedic_decisions_total", outcome="refuse") or 0.0) == refusals
        assert scrape(port, "kmedic_refusing_to_heal") == 0
        assert scrape(port, "kmedic_last_decision", outcome="refuse") == 0
        status = json.loads(
            urllib.request.urlopen(f"http://127.0.0.1:{port}/status.json", timeout=10).read()
        )
        assert status["active_alerts"] == {}, status["active_alerts"]
        raised = [
            r.summary for r in read_audit(bootstrap, topics["actions"]) if r.kind == "alert_raised"
        ]
        assert raised == [], raised
    finally:
        pipeline.stop()
