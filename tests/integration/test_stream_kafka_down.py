"""Issue 39.10, the stream job's part: started while Kafka is unreachable, `kmedic stream` does
not exit (systemd's StartLimitBurst would give up on it, and it would stay down when Kafka
returns): it waits, one log line per attempt, and a signal ends the wait (an attempt under
way ends within its 10 s probe; exit 0). A real process against a port nothing listens on;
no Spark starts before Kafka answers. The doubling of the wait is checked in
tests/unit/test_streaming_topics_wait.py."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers import wait_for

from kmedic.localcluster import process

pytestmark = pytest.mark.integration


def test_a_stream_job_started_with_kafka_down_waits_for_it(tmp_path: Path) -> None:
    port = process.free_ports(1)[0]  # nothing listens there
    config = tmp_path / "stream.yaml"
    config.write_text(
        f"cluster: down\nbootstrap: 127.0.0.1:{port}\n"
        f"checkpoint_location: {tmp_path / 'checkpoint'}\nmetrics_port: null\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "composition.cli", "stream", "--config", str(config)],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr or ()), daemon=True)
    reader.start()
    try:
        wait_for(
            lambda: any("kafka_unreachable_at_start" in line for line in lines),
            timeout=60,
            what="the first attempt to reach Kafka, logged",
        )
        assert proc.poll() is None, "the job exited while Kafka was down"
        [first] = [line for line in lines if "kafka_unreachable_at_start" in line]
        assert '"attempt": 1' in first and '"retry_in_s": 2.0' in first, first
        assert not any("SparkSession" in line or "Traceback" in line for line in lines), lines
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0, lines
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
