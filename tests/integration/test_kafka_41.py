"""The 4.1 line, still tested: the local cluster runs the newest Kafka release (4.4) by
default, and this module runs the agent's, the executor's and a heal's tests again, unchanged,
on a cluster of Kafka 4.1.1 (``ClusterSpec(kafka_jars=KAFKA_4_1)``): the tests are imported
from their modules and this module's ``local_cluster`` takes the session cluster's place for
them. The subset keeps the suite within its time (docs/testing.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_agent_cluster import (  # noqa: F401 (collected here again, on 4.1)
    run_agent,
    test_a_leader_change_shows_without_a_metadata_read,
    test_per_partition_bytes_in_within_20_percent,
    test_roles_equal_the_admin_api,
)
from test_executor import (  # noqa: F401
    executor_factory,
    test_a_move_that_stops_copying_is_reported_cancelled_and_replanned_elsewhere,
    test_each_replicas_bytes_are_kafkas_figure,
    test_reassignment_is_throttled_tracked_and_cleaned_up,
)
from test_write_unavailable_heal import (  # noqa: F401
    test_a_write_unavailable_partition_heals_within_its_short_grace,
)

from kmedic.errors import KmedicError
from kmedic.localcluster import ClusterSpec, LocalCluster
from kmedic.localcluster.configs import KAFKA_4_1
from manager.executor.admin_calls import AdminCalls
from manager.executor.cordons import BrokerCordons, Cordon

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster of Kafka 4.1.1, shaped as the session's (4 brokers on racks /r1 and /r2)."""
    spec = ClusterSpec(brokers=4, racks=("/r1", "/r2"), kafka_jars=KAFKA_4_1)
    workdir: Path = tmp_path_factory.mktemp("kafka-4.1")
    try:
        cluster = LocalCluster.start(spec, workdir)
    except KmedicError as exc:
        pytest.fail(f"the Kafka 4.1 cluster did not start: {exc}")
    yield cluster
    cluster.stop()


def test_the_cluster_here_runs_kafka_4_1(local_cluster: LocalCluster) -> None:
    """What the tests above ran on: the 4.1.1 jars, not the newest release's."""
    log = (Path(local_cluster.brokers[0].directory) / "server.log").read_text()
    assert "Kafka version: 4.1.1" in log


def test_kafka_4_1_knows_no_cordon(local_cluster: LocalCluster) -> None:
    """A broker before 4.3 does not know ``cordoned.log.dirs``: kmedic reads that, and so never
    writes it there (4.1 would store it as an unknown config and ignore it)."""
    calls = AdminCalls(local_cluster.bootstrap_servers, 10.0, 10.0)
    try:
        assert BrokerCordons(calls).read(1) == Cordon(supported=False)
    finally:
        calls.close()
