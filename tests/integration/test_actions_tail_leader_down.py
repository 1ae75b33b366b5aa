"""`kmedic actions tail` (without --follow) started the moment the audit topic's leader dies:
until the controller fences the broker (6 s on this cluster) the leader does not answer, and
then another takes over with a new epoch. The tail asks again through both and prints the
records, with no client log line on stderr; cc19 saw the reader give up in that window."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from typing import Any

import pytest
from helpers import create_placed_topic

from manager.audit.kafka_sink import KafkaAuditSink
from manager.audit.log import AuditRecord

pytestmark = pytest.mark.integration


def test_the_tail_reads_through_the_death_of_the_audit_leader(healthy_cluster: Any) -> None:
    bootstrap = healthy_cluster.bootstrap_servers
    topic = f"it.actions.{uuid.uuid4().hex[:8]}"
    create_placed_topic(bootstrap, topic, [[4, 3, 2]])  # broker 4 leads
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 60))
    sink = KafkaAuditSink("primary", bootstrap, topic)
    try:
        records = [
            AuditRecord(cluster="c", instance="m", epoch=1, kind="decision", summary=f"r{n}")
            for n in range(3)
        ]
        assert sink.send(records, timeout_s=30) == 3
    finally:
        sink.close()

    healthy_cluster.kill(4)
    started = time.monotonic()
    tail = subprocess.run(
        [
            *(sys.executable, "-m", "composition.cli", "actions", "tail"),
            *("--bootstrap", bootstrap, "--topic", topic, "--since", since, "--all"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    assert tail.returncode == 0, tail.stderr
    assert [line.split()[-1] for line in tail.stdout.splitlines()] == ["r0", "r1", "r2"], (
        tail.stdout
    )
    assert "rdkafka" not in tail.stderr and "FAIL" not in tail.stderr, tail.stderr
    assert took > 3, f"read in {took:.1f} s: the dead leader's window was missed"
