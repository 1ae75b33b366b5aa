"""`kmedic actions tail --follow` rides through every broker restarting: it says so on stderr,
keeps running, and prints what is written after the brokers are back."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_for

from manager.audit.kafka_sink import KafkaAuditSink, ensure_audit_topic
from manager.audit.log import AuditRecord

pytestmark = pytest.mark.integration


def record(n: int) -> AuditRecord:
    return AuditRecord(
        cluster="local", instance="manager-a", epoch=1, kind="decision", summary=f"follow {n}"
    )


def write(bootstrap: str, topic: str, n: int) -> None:
    sink = KafkaAuditSink("primary", bootstrap, topic)
    try:
        assert sink.send([record(n)], timeout_s=30) == 1
    finally:
        sink.close()


def test_follow_keeps_following_through_a_restart_of_every_broker(
    healthy_cluster: Any, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    topic = f"kmedic.actions.follow-{uuid.uuid4().hex[:8]}"
    ensure_audit_topic(bootstrap, topic, replication_factor=3)
    write(bootstrap, topic, 0)
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    # --all: the records differ in a number alone, which the default folds as repeats.
    args = ["actions", "tail", "--follow", "--all", "--bootstrap", bootstrap, "--topic", topic]
    with out.open("w") as stdout, err.open("w") as stderr:
        tail = subprocess.Popen(
            [sys.executable, "-m", "composition.cli", *args],
            stdout=stdout,
            stderr=stderr,
        )
    try:
        wait_for(lambda: "follow 0" in out.read_text(), timeout=60, what="the first record")
        for broker in cluster.broker_ids:
            cluster.kill(broker)
        wait_for(
            lambda: "still following" in err.read_text(),
            timeout=90,
            what="the tail to say it lost the topic and keeps following",
        )
        assert tail.poll() is None, f"the tail exited: {err.read_text()}"
        cluster.restart_many(list(cluster.broker_ids))
        write(bootstrap, topic, 1)
        wait_for(
            lambda: "follow 1" in out.read_text(),
            timeout=120,
            what="the record written after the restart",
        )
        assert tail.poll() is None, f"the tail exited: {err.read_text()}"
        wait_for(lambda: "again" in err.read_text(), timeout=10, what="the tail to say so")
        assert "Traceback" not in err.read_text()
    finally:
        tail.terminate()
        tail.wait(timeout=30)
