"""Shared fixtures: one real cluster per test session.

KMEDIC_TEST_CLUSTER selects it: ``local`` (default) starts ZooKeeper, a KRaft controller and
four brokers on two racks from the bootstrapped jars; ``testcontainers`` uses testcontainers'
Kafka and ZooKeeper when a Docker engine is reachable, and otherwise skips with that reason.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from kmedic.errors import KmedicError
from kmedic.localcluster import ClusterSpec, LocalCluster

CLUSTER_KIND = os.environ.get("KMEDIC_TEST_CLUSTER", "local")

# `make test` runs every property on the same examples each time, so a landing never fails on
# a case no earlier run drew; `make shake` searches for new ones with many random seeds
# (docs/testing.md). Loaded here, before any test module builds its own settings from it.
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("shake", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("KMEDIC_HYPOTHESIS", "repeatable"))


def _docker_reachable() -> str | None:
    """None when a Docker engine answers; otherwise why not."""
    try:
        import docker  # type: ignore[import-untyped]

        docker.from_env().ping()
    except Exception as exc:  # any failure means no usable engine
        return f"no Docker engine reachable ({type(exc).__name__}: {exc})"
    return None


class ContainerCluster:
    """testcontainers' single-broker Kafka plus ZooKeeper, with the LocalCluster attributes
    tests read. Operations a container cluster cannot do (SIGKILL one of several brokers,
    the JMX exporter) skip the test that asks for them, with that reason."""

    def __init__(self) -> None:
        from testcontainers.core.container import DockerContainer
        from testcontainers.kafka import KafkaContainer

        self._kafka: Any = KafkaContainer().with_kraft()
        self._kafka.start()
        self._zk: Any = DockerContainer("zookeeper:3.9").with_exposed_ports(2181)
        self._zk.start()
        self.bootstrap_servers: str = self._kafka.get_bootstrap_server()
        self.zk_connect = f"{self._zk.get_container_host_ip()}:{self._zk.get_exposed_port(2181)}"
        self.broker_ids = [1]

    def _unsupported(self, what: str) -> None:
        pytest.skip(f"the testcontainers cluster cannot {what}")

    def exporter_url(self, broker_id: int) -> str:
        self._unsupported("expose the JMX exporter")
        raise AssertionError("unreachable")

    def rack(self, broker_id: int) -> str:
        self._unsupported("assign racks")
        raise AssertionError("unreachable")

    def kill(self, broker_id: int) -> None:
        self._unsupported("kill one of several brokers")

    def restart(self, broker_id: int) -> None:
        self._unsupported("restart a broker")

    def is_alive(self, broker_id: int) -> bool:
        return True

    def stop(self) -> None:
        self._kafka.stop()
        self._zk.stop()


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real cluster for the whole session: 4 brokers (ids 1-4) on racks /r1 and /r2."""
    if CLUSTER_KIND == "testcontainers":
        reason = _docker_reachable()
        if reason is not None:
            pytest.skip(f"KMEDIC_TEST_CLUSTER=testcontainers: {reason}")
        container_cluster = ContainerCluster()
        yield container_cluster
        container_cluster.stop()
        return
    if CLUSTER_KIND != "local":
        raise pytest.UsageError(
            f"KMEDIC_TEST_CLUSTER must be local or testcontainers, not {CLUSTER_KIND!r}"
        )
    workdir: Path = tmp_path_factory.mktemp("cluster")
    try:
        cluster = LocalCluster.start(ClusterSpec(brokers=4, racks=("/r1", "/r2")), workdir)
    except KmedicError as exc:
        pytest.fail(f"the local cluster did not start: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def healthy_cluster(local_cluster: Any) -> Iterator[Any]:
    """The session cluster with every broker running and no replication throttle rate, before
    and after the test: a test that kills brokers leaves the next one a whole cluster, and a
    manager stopped mid-heal does not leave its rates to slow the next test's moves."""
    _revive(local_cluster)
    _remove_throttle_rates(local_cluster)
    yield local_cluster
    _revive(local_cluster)
    _remove_throttle_rates(local_cluster)


def _revive(cluster: Any) -> None:
    for broker_id in cluster.broker_ids:
        if not cluster.is_alive(broker_id):
            cluster.restart(broker_id)


def _remove_throttle_rates(cluster: Any) -> None:
    """Delete both replication throttle rates on every broker (one broker per request: a
    broker's dynamic config is changed on that broker)."""
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

    from manager.model.throttles import RATE_KEYS

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        for broker_id in cluster.broker_ids:
            delete = {key: (AlterConfigOp.DELETE, None) for key in RATE_KEYS}
            results = admin.alter_configs(
                [ConfigResource(ConfigResourceType.BROKER, str(broker_id), configs=delete)],
                incremental=True,
                raise_on_unknown=False,
            )
            failed = [o for by_name in results.values() for o in by_name.values() if o != "OK"]
            assert not failed, f"removing broker {broker_id}'s throttle rates: {failed}"
    finally:
        admin.close()
