"""The audit log through a full cluster outage: spool, replay in order, nothing lost."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from composition.cli import main
from kmedic.localcluster import ClusterSpec, LocalCluster
from manager.audit.kafka_reader import read_records
from manager.audit.kafka_sink import KafkaAuditSink, ensure_audit_topic
from manager.audit.log import AuditLog, AuditRecord

pytestmark = pytest.mark.integration


def rec(n: int, kind: Any = "action_progress") -> AuditRecord:
    return AuditRecord(
        cluster="local",
        instance="manager-a",
        epoch=7,
        kind=kind,
        summary=f"step {n}",
        reasons=(f"reason {n}",),
        partitions=(f"orders:{n % 3}",),
        before={"replicas": [1, 2, 3]},
        after={"replicas": [1, 4, 3]},
    )


def test_every_broker_down_spools_then_replays_in_order(
    healthy_cluster: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    topic = f"kmedic.actions.test-{uuid.uuid4().hex[:8]}"
    ensure_audit_topic(bootstrap, topic, replication_factor=3)
    spool_dir = tmp_path / "spool"
    log = AuditLog(
        KafkaAuditSink("primary", bootstrap, topic),
        spool_dir,
        write_timeout_s=3.0,
        retry_interval_s=1.0,
    )
    written: list[AuditRecord] = []
    try:
        written += [log.write(rec(n, "decision" if n == 0 else "action_started")) for n in range(3)]
        assert [r.sink for r in written] == ["primary"] * 3

        for broker_id in cluster.broker_ids:
            cluster.kill(broker_id)
        wait_for(
            lambda: not any(cluster.is_alive(b) for b in cluster.broker_ids),
            timeout=30,
            what="every broker to be dead",
        )
        during = [log.write(rec(n)) for n in range(3, 8)]
        written += during
        assert [r.sink for r in during] == ["spool"] * 5
        assert log.on_failover and log.spool.pending() == 5
        spooled = [json.loads(line) for line in log.spool.path.read_text().splitlines()]
        assert [d["id"] for d in spooled] == [r.id for r in during]
        assert log.replay(force=True) == 0  # still down: nothing replayed, nothing dropped
        assert log.spool.pending() == 5

        for broker_id in cluster.broker_ids:
            cluster.restart(broker_id)
        wait_for(
            lambda: log.replay(force=True) >= 0 and not log.on_failover,
            timeout=120,
            interval=1.0,
            what="the spool to be replayed to the primary",
        )
        after = [log.write(rec(n, "action_completed")) for n in range(8, 10)]
        written += after
        assert [r.sink for r in after] == ["primary"] * 2
        assert log.spool.path.stat().st_size == 0
    finally:
        log.close()

    read = list(read_records(bootstrap, topic, timeout_s=30))
    assert [r.id for r in read] == [r.id for r in written]
    assert [r.summary for r in read] == [f"step {n}" for n in range(10)]
    assert [r.sink for r in read] == ["primary"] * 3 + ["spool"] * 5 + ["primary"] * 2
    assert read[4].before == {"replicas": [1, 2, 3]} and read[4].epoch == 7

    # On-call view of the same topic: one line per record (--all: these records differ in
    # their numbers alone, which the default folds as repeats), the spooled ones marked.
    assert main(["actions", "tail", "--bootstrap", bootstrap, "--topic", topic, "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 10
    assert "decision" in lines[0] and "step 0" in lines[0]
    assert all("[via spool]" in line for line in lines[3:8])
    assert not any("[via" in line for line in lines[:3] + lines[8:])
    assert main(["actions", "tail", "--bootstrap", bootstrap, "--topic", topic, "--json"]) == 0
    as_json = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [d["id"] for d in as_json] == [r.id for r in written]


def test_tail_since_skips_older_records(
    healthy_cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = f"kmedic.actions.test-{uuid.uuid4().hex[:8]}"
    ensure_audit_topic(bootstrap, topic, replication_factor=3)
    sink = KafkaAuditSink("primary", bootstrap, topic)
    old = rec(0).model_copy(update={"time_ms": 1_000_000_000_000})
    new = rec(1)
    assert sink.send([old, new, new], timeout_s=10) == 3  # a repeat, as after a replay
    sink.close()
    assert main(["actions", "tail", "--bootstrap", bootstrap, "--topic", topic]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2  # the repeat is dropped by id
    assert (
        main(["actions", "tail", "--bootstrap", bootstrap, "--topic", topic, "--since", "1h"]) == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and "step 1" in out[0]


def test_tail_of_a_missing_topic_is_one_clear_error(
    healthy_cluster: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    code = main(["actions", "tail", "--bootstrap", bootstrap, "--topic", "no.such.audit.topic"])
    err = capsys.readouterr().err.strip()
    assert code == 1
    assert err.startswith("kmedic: error: cannot read audit topic no.such.audit.topic at ")


@pytest.fixture(scope="module")
def secondary_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A second, one-broker Kafka cluster: the audit log's secondary bootstrap."""
    cluster = LocalCluster.start(
        ClusterSpec(brokers=1, racks=("/s1",)), tmp_path_factory.mktemp("secondary")
    )
    yield cluster
    cluster.stop()


def test_secondary_bootstrap_takes_records_during_the_outage(
    healthy_cluster: Any, secondary_cluster: Any, tmp_path: Path
) -> None:
    primary_bootstrap = healthy_cluster.bootstrap_servers
    secondary_bootstrap = secondary_cluster.bootstrap_servers
    topic = f"kmedic.actions.test-{uuid.uuid4().hex[:8]}"
    ensure_audit_topic(primary_bootstrap, topic)
    ensure_audit_topic(secondary_bootstrap, topic)
    log = AuditLog(
        KafkaAuditSink("primary", primary_bootstrap, topic),
        tmp_path / "spool",
        secondary=KafkaAuditSink("secondary", secondary_bootstrap, topic),
        write_timeout_s=3.0,
        retry_interval_s=1.0,
    )
    try:
        first = log.write(rec(0, "decision"))
        for broker_id in healthy_cluster.broker_ids:
            healthy_cluster.kill(broker_id)
        during = [log.write(rec(n)) for n in range(1, 4)]
        assert [r.sink for r in during] == ["secondary"] * 3
        assert log.spool.pending() == 3  # spooled as well, for the replay
        on_secondary = list(read_records(secondary_bootstrap, topic, timeout_s=30))
        assert [r.id for r in on_secondary] == [r.id for r in during]
        for broker_id in healthy_cluster.broker_ids:
            healthy_cluster.restart(broker_id)
        wait_for(
            lambda: log.replay(force=True) >= 0 and not log.on_failover,
            timeout=120,
            interval=1.0,
            what="the spool to be replayed to the primary",
        )
        last = log.write(rec(4, "action_completed"))
    finally:
        log.close()
    on_primary = list(read_records(primary_bootstrap, topic, timeout_s=30))
    assert [r.id for r in on_primary] == [r.id for r in [first, *during, last]]
    assert [r.sink for r in on_primary] == ["primary", *["secondary"] * 3, "primary"]
