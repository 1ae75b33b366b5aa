"""Restart safety on the real cluster: `kmedic stream` SIGKILLed mid-stream and started again
from its checkpoint leaves the compacted topics with the values of an uninterrupted run.

Both runs read the same pre-filled brokerstats topic with ``available_now`` (the topic is
drained in many small micro-batches, then the job stops), which makes the comparison exact.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import wait_for
from streaming_support import (
    create_topic,
    latest_per_key,
    produce,
    read_all,
    spark,
    stream_config,
    topic_config,
    unique,
)

from streaming import job, synthetic, topics
from streaming.config import StreamConfig

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the fixture, imported for pytest

LAYOUT = synthetic.Layout(brokers=4, topics=2, partitions=3, replication_factor=2)
TICKS = 8
BATCH_RECORDS = 8
BAD_RECORDS = [b"not json", b'{"schema_version": 9}', b'{"schema_version": 1}']


def _run_in_process(spark_session: Any, cfg: StreamConfig) -> None:
    topics.ensure_output_topics(cfg)
    job.await_queries(job.start_queries(spark_session, cfg))


def _cli(cfg_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "kmedic.cli", "--log-json", "stream", "--config", str(cfg_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: the kill takes the JVM with it
    )


def _committed_batches(checkpoint: Path) -> int:
    commits = checkpoint / "loads" / "commits"
    return (
        len([p for p in commits.iterdir() if not p.name.startswith(".")]) if commits.is_dir() else 0
    )


def _write_config(cfg: StreamConfig, path: Path) -> Path:
    path.write_text(yaml.safe_dump(cfg.model_dump(mode="json")))
    return path


def test_kill_and_restart_converges_to_an_uninterrupted_run(
    local_cluster: Any, spark: Any, tmp_path: Path
) -> None:
    bootstrap = local_cluster.bootstrap_servers
    source = unique("it.brokerstats")
    create_topic(bootstrap, source, partitions=3)
    start_ms = (int(time.time() * 1000) // 10_000) * 10_000 - TICKS * 10_000
    good = list(synthetic.records(LAYOUT, start_ms, TICKS))
    produce(bootstrap, source, good[: len(good) // 2])
    produce(bootstrap, source, [(b"9", v) for v in BAD_RECORDS])
    produce(bootstrap, source, good[len(good) // 2 :])

    common = {"available_now": True, "max_offsets_per_trigger": BATCH_RECORDS}
    uninterrupted = stream_config(bootstrap, source, tmp_path / "cp-a", **common)
    _run_in_process(spark, uninterrupted)
    expected_replicas = latest_per_key(bootstrap, uninterrupted.topics.replica_loads)
    expected_brokers = latest_per_key(bootstrap, uninterrupted.topics.broker_loads)
    assert set(expected_replicas) == {
        f"{synthetic.topic_name(t)}:{p}" for t in range(LAYOUT.topics) for p in range(3)
    }
    assert set(expected_brokers) == {"1", "2", "3", "4"}
    for name in (uninterrupted.topics.replica_loads, uninterrupted.topics.broker_loads):
        assert topic_config(bootstrap, name, "cleanup.policy") == "compact"

    # The same input, written to other topics by `kmedic stream`, killed after a few batches.
    killed_cfg = stream_config(
        bootstrap, unique("it.brokerstats"), tmp_path / "cp-b", **common
    ).model_copy(
        update={
            "topics": uninterrupted.topics.model_copy(
                update={
                    "brokerstats": source,
                    "replica_loads": unique("it.replica-loads"),
                    "broker_loads": unique("it.broker-loads"),
                    "dlq": unique("it.dlq"),
                }
            )
        }
    )
    cfg_path = _write_config(killed_cfg, tmp_path / "stream.yaml")
    proc = _cli(cfg_path)
    try:
        wait_for(
            lambda: _committed_batches(killed_cfg.checkpoint_location) >= 2 or proc.poll(),
            timeout=180,
            what="two committed micro-batches of kmedic stream",
        )
        assert proc.poll() is None, f"kmedic stream ended early: {proc.stderr.read()!r}"  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    total_batches = -(-len(good + BAD_RECORDS) // BATCH_RECORDS)
    assert _committed_batches(killed_cfg.checkpoint_location) < total_batches, "not mid-stream"
    partial = latest_per_key(bootstrap, killed_cfg.topics.replica_loads)
    assert partial != expected_replicas, "the kill came after the last batch"

    restarted = _cli(cfg_path)
    try:
        code = restarted.wait(timeout=300)
    finally:
        if restarted.poll() is None:
            os.killpg(restarted.pid, signal.SIGKILL)
            restarted.wait(timeout=30)
    assert code == 0, restarted.stderr.read().decode()[-2000:]  # type: ignore[union-attr]

    assert latest_per_key(bootstrap, killed_cfg.topics.replica_loads) == expected_replicas
    assert latest_per_key(bootstrap, killed_cfg.topics.broker_loads) == expected_brokers

    # Bad records reach the DLQ with their bytes intact (at least once across the restart).
    for cfg in (uninterrupted, killed_cfg):
        dlq = read_all(bootstrap, cfg.topics.dlq)
        assert {m.value() for m in dlq} == set(BAD_RECORDS)
        reasons = {dict(m.headers())["kmedic.reason"] for m in dlq}
        assert reasons == {b"invalid_json", b"unsupported_schema_version", b"schema_mismatch"}
