"""The Spark job on a real Spark standalone cluster: a master and two workers started from
PySpark's own distribution, the job submitted with ``spark-submit --master spark://...`` as
docs/streaming.md says, and one executor SIGKILLed mid-stream.

The cluster run reads the same pre-filled brokerstats topic as a ``local[2]`` run in this
process (``available_now``, small micro-batches, so both runs cut the input into the same
batches) and must write the same loads: the same value per key, and the same set of records,
so no window is lost and none is written with other contents. (A task retried after the kill
may write a record a second time, byte for byte: Kafka's batch sink is at-least-once, and a
compacted topic keeps one of them.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import wait_for
from streaming_support import (
    committed_batches,
    create_topic,
    produce,
    read_all,
    run_in_process,
    spark,
    stream_config,
    ticks_start_ms,
    unique,
)

from kmedic.localcluster.process import LIGHT_JVM_OPTIONS
from kmedic.localcluster.spark_standalone import StandaloneCluster, standalone_cluster
from streaming import job, synthetic
from streaming.config import StreamConfig
from streaming.session import connector_jars, functions_jar

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the fixture, imported for pytest

LAYOUT = synthetic.Layout(brokers=4, topics=2, partitions=3, replication_factor=2)
TICKS = 8
BATCH_RECORDS = 4


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("spark-standalone"), workers=2) as cluster:
        yield cluster


def _records(bootstrap: str, topic: str) -> list[tuple[str, str]]:
    return [(m.key().decode(), m.value().decode()) for m in read_all(bootstrap, topic)]


def _latest(records: list[tuple[str, str]]) -> dict[str, str]:
    return dict(records)  # read_all returns each partition in offset order; keys stay put


def _submit(cluster: StandaloneCluster, cfg_path: Path, log: Path) -> subprocess.Popen[bytes]:
    """docs/streaming.md's command, on this machine's loopback."""
    jars = ",".join(str(j) for j in [functions_jar(), *connector_jars()])
    submit = Path(sys.executable).with_name("spark-submit")
    light = " ".join(LIGHT_JVM_OPTIONS)
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                str(submit),
                *("--master", cluster.master_url, "--deploy-mode", "client"),
                *("--driver-memory", "768m", "--executor-memory", "512m"),
                *("--total-executor-cores", "2", "--conf", "spark.executor.cores=1"),
                *("--conf", "spark.driver.host=127.0.0.1"),
                *("--conf", "spark.driver.bindAddress=127.0.0.1"),
                # Short-lived JVMs on two shared cores (kmedic.localcluster.process).
                *("--driver-java-options", light),
                *("--conf", f"spark.executor.extraJavaOptions={light}"),
                *("--jars", jars),
                str(Path(job.__file__).with_name("submit.py")),
                *("--config", str(cfg_path)),
            ],
            env=cluster.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_the_job_on_a_spark_cluster_loses_and_duplicates_no_window_when_an_executor_dies(
    local_cluster: Any, spark: Any, standalone: StandaloneCluster, tmp_path: Path
) -> None:
    bootstrap = local_cluster.bootstrap_servers
    source = unique("it.brokerstats")
    create_topic(bootstrap, source, partitions=3)
    start_ms = ticks_start_ms(TICKS)
    records = list(synthetic.records(LAYOUT, start_ms, TICKS))
    produce(bootstrap, source, records)

    common = {"available_now": True, "max_offsets_per_trigger": BATCH_RECORDS}
    local = stream_config(bootstrap, source, tmp_path / "cp-local", **common)
    run_in_process(spark, local)
    expected = _records(bootstrap, local.topics.replica_loads)
    expected_brokers = _records(bootstrap, local.topics.broker_loads)
    assert expected and expected_brokers

    on_cluster: StreamConfig = local.model_copy(
        update={
            "checkpoint_location": tmp_path / "cp-cluster",
            "topics": local.topics.model_copy(
                update={
                    "replica_loads": unique("it.replica-loads"),
                    "broker_loads": unique("it.broker-loads"),
                    "dlq": unique("it.dlq"),
                }
            ),
        }
    )
    cfg_path = tmp_path / "stream.yaml"
    cfg_path.write_text(yaml.safe_dump(on_cluster.model_dump(mode="json")))
    log = tmp_path / "spark-submit.log"
    proc = _submit(standalone, cfg_path, log)
    try:
        wait_for(
            lambda: (
                (
                    committed_batches(on_cluster.checkpoint_location) >= 2
                    and len(standalone.executors()) == 2
                )
                or proc.poll() is not None
            ),
            timeout=240,
            what="two committed micro-batches on two executors",
        )
        assert proc.poll() is None, f"spark-submit ended early:\n{log.read_text()[-3000:]}"
        total = -(-len(records) // BATCH_RECORDS)
        assert committed_batches(on_cluster.checkpoint_location) < total, "not mid-stream"
        os.kill(standalone.executors()[0], signal.SIGKILL)
        code = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    assert code == 0, log.read_text()[-3000:]
    assert len(standalone.executor_dirs()) >= 3, "the killed executor was replaced"

    got = _records(bootstrap, on_cluster.topics.replica_loads)
    assert set(got) == set(expected), "a window lost, or written with other contents"
    assert _latest(got) == _latest(expected)
    got_brokers = _records(bootstrap, on_cluster.topics.broker_loads)
    assert set(got_brokers) == set(expected_brokers)
    assert _latest(got_brokers) == _latest(expected_brokers)
