"""`kmedic agent --config FILE` as a process: publishes, serves /metrics, SIGTERM flushes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from helpers import kafka_conf, wait_for

from kmedic import brokerstats as bs

pytestmark = pytest.mark.integration

KMEDIC = Path(sys.executable).parent / "kmedic"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_agent_process_publishes_and_stops_cleanly(healthy_cluster: Any, tmp_path: Path) -> None:
    cluster = healthy_cluster
    broker = cluster.broker_ids[1]
    name = f"cli-{uuid.uuid4().hex[:8]}"
    topic = f"kmedic.brokerstats.{name}"
    port = _free_port()
    config = tmp_path / "agent.yaml"
    config.write_text(
        f"broker_id: {broker}\n"
        f"bootstrap: {cluster.bootstrap_servers}\n"
        f"exporter_url: {cluster.exporter_url(broker)}\n"
        f"cluster: {name}\n"
        "interval_s: 10\n"  # overridden below: the environment wins over the file
        f"topic: {topic}\n"
        f"metrics_port: {port}\n"
        "metrics_host: 127.0.0.1\n"
    )
    env = {"KMEDIC_AGENT__INTERVAL_S": "1"}
    proc = subprocess.Popen(
        [str(KMEDIC), "--log-json", "agent", "--config", str(config)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    events: list[dict[str, Any]] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            try:
                events.append(json.loads(line))
            except ValueError:
                events.append({"event": line.strip()})

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        wait_for(
            lambda: sum(e.get("event") == "sample_published" for e in events) >= 3,
            timeout=60,
            what="three published samples",
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            page = resp.read().decode()
        assert f'kmedic_agent_samples_total{{broker="{broker}",outcome="ok"}}' in page
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=5)
    stopped = [e for e in events if e.get("event") == "agent_stopped"]
    assert stopped and stopped[0]["undelivered"] == 0, events[-5:]

    consumer = Consumer(
        kafka_conf(
            cluster.bootstrap_servers,
            {
                "group.id": f"test-{uuid.uuid4().hex}",
                "auto.offset.reset": "earliest",
            },
        )
    )
    consumer.subscribe([topic])
    records: list[bs.BrokerStats] = []
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline and len(records) < 3:
            msg = consumer.poll(1.0)
            if msg is not None and not msg.error() and not bs.is_heartbeat(msg.value()):
                assert msg.key() == str(broker).encode()
                records.append(bs.from_json(msg.value()))
    finally:
        consumer.close()
    assert len(records) >= 3
    assert {r.cluster for r in records} == {name}
    assert {r.interval_s for r in records} == {1.0}
    assert all(r.failure is None for r in records)
    print(bs.summarize(records[-1]))
