"""The local cluster's Kafka nodes and the local Spark driver map the class-sharing archives the
bootstrap built (kmedic/localcluster/class_sharing.py). The JVM says nothing when it cannot use
an archive (missing, from another JDK, another class path), so a stale or missing one would only
show as slower starts: this reads each JVM's memory map."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from required_tools import skip_missing
from streaming_support import spark  # noqa: F401 (a fixture)

from kmedic.localcluster import class_sharing, configs

pytestmark = pytest.mark.integration


def mapped_files(pid: int) -> set[str]:
    return {
        fields[5]
        for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
        if len(fields := line.split(maxsplit=5)) == 6
    }


def test_every_kafka_node_of_the_session_cluster_maps_the_archive(local_cluster: Any) -> None:
    archive = class_sharing.archive_path(configs.KAFKA_NEWEST)
    if not archive.is_file():
        skip_missing(f"the class-sharing archive {archive} (`make bootstrap` builds it)")
    kafka_nodes = [n for n in local_cluster.status() if n["node"] != "zookeeper"]
    assert len(kafka_nodes) == 5, kafka_nodes  # the controller and four brokers
    for node in kafka_nodes:
        assert str(archive) in mapped_files(node["pid"]), f"{node['node']} does not map {archive}"


def test_the_shared_spark_driver_maps_its_archive(spark: Any) -> None:  # noqa: F811
    archive = class_sharing.spark_driver_archive()
    if not archive.is_file():
        skip_missing(f"the Spark driver's class-sharing archive {archive} (`make bootstrap`)")
    driver = spark.sparkContext._gateway.proc.pid  # pyspark's launcher execs the JVM in place
    assert str(archive) in mapped_files(driver), f"the Spark driver does not map {archive}"
