"""Shared fixtures: one real cluster per test session.

KMEDIC_TEST_CLUSTER selects it: ``local`` (default) starts ZooKeeper, a KRaft controller and
four brokers on two racks from the bootstrapped jars; ``testcontainers`` runs the same cluster
with each node in a container of an image built from those jars (tests/container_cluster.py),
through Docker or podman's Docker API, and skips, saying why, where neither can run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from required_tools import missing, must_fail

from kmedic.errors import KmedicError
from kmedic.localcluster import ClusterSpec, LocalCluster

pytest_plugins = ["cpu_account", "lanes"]

CLUSTER_KIND = os.environ.get("KMEDIC_TEST_CLUSTER", "local")

# `make test` runs every property on the same examples each time, so a landing never fails on
# a case no earlier run drew; `make shake` searches for new ones with many random seeds
# (docs/testing.md). Loaded here, before any test module builds its own settings from it. No
# deadline and no check that drawing examples is slow: speed is not a property (bench/ measures
# it), and a core busy with something else would fail either.
_UNTIMED = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("repeatable", _UNTIMED, derandomize=True, print_blob=True)
settings.register_profile("shake", _UNTIMED, derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("KMEDIC_HYPOTHESIS", "repeatable"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CI a skip for a missing tool is a failure (tests/required_tools.py)."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    failure = must_fail(report)
    if failure is not None:
        report.outcome = "failed"
        report.longrepr = failure


@pytest.fixture(scope="session")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A real cluster for the whole session: 4 brokers (ids 1-4) on racks /r1 and /r2."""
    if CLUSTER_KIND not in ("local", "testcontainers"):
        raise pytest.UsageError(
            f"KMEDIC_TEST_CLUSTER must be local or testcontainers, not {CLUSTER_KIND!r}"
        )
    spec = ClusterSpec(brokers=4, racks=("/r1", "/r2"))
    workdir: Path = tmp_path_factory.mktemp("cluster")
    if CLUSTER_KIND == "testcontainers":
        yield from _container_cluster(spec, workdir, tmp_path_factory.mktemp("engine"))
        return
    cluster = _started(LocalCluster, spec, workdir)
    yield cluster
    cluster.stop()


def _started(kind: type[LocalCluster], spec: ClusterSpec, workdir: Path) -> LocalCluster:
    try:
        return kind.start(spec, workdir)
    except KmedicError as exc:
        pytest.fail(f"the {kind.__name__} did not start: {exc}")


def _container_cluster(spec: ClusterSpec, workdir: Path, engine_dir: Path) -> Iterator[Any]:
    """The same cluster with every node in a container (tests/container_cluster.py)."""
    from container_cluster import ContainerCluster
    from container_support import EngineMissing, build_image, container_engine

    try:
        with container_engine(engine_dir) as engine:
            build_image(engine, "--kafka")
            cluster = _started(ContainerCluster, spec, workdir)
            yield cluster
            cluster.stop()
    except EngineMissing as exc:
        pytest.skip(missing(f"KMEDIC_TEST_CLUSTER=testcontainers: {exc}"))


@pytest.fixture
def healthy_cluster(local_cluster: Any) -> Iterator[Any]:
    """The session cluster with every broker running and no replication throttle rate or
    cordon, before and after the test: a test that kills brokers leaves the next one a whole
    cluster. A test that ends with a throttle rate or a cordon still set fails, naming it
    (kmedic must remove the rates it sets, and uncordon a broker its drain no longer holds; a
    test that stops a manager mid-heal removes them itself): they are removed for the next
    test, and never silently."""
    _revive(local_cluster)
    _remove_throttle_rates(local_cluster)
    yield local_cluster
    _revive(local_cluster)
    leaked = _throttle_rates(local_cluster)
    _remove_throttle_rates(local_cluster)
    if leaked:
        pytest.fail(f"the test left replication throttle rates or cordons set: {leaked}")


def _throttle_rates(cluster: Any) -> dict[int, dict[str, str]]:
    """The replication throttle rates and cordon set on each broker (its dynamic configs). A
    broker just back (restarted or resumed) may not answer for a moment, or be missing from the
    metadata a fresh client bootstraps from: then a new client asks again, for up to 60 s, and
    the error names the broker that never answered."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + 60
    while True:
        try:
            return _throttle_rates_once(cluster)
        except (KafkaException, TimeoutError) as exc:
            if time.monotonic() > deadline:
                raise AssertionError(f"reading the brokers' throttle rates: {exc}") from exc
            time.sleep(1)


def _throttle_rates_once(cluster: Any) -> dict[int, dict[str, str]]:
    from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource
    from helpers import kafka_conf

    from manager.executor.cordons import CORDONED_LOG_DIRS
    from manager.throttling.ownership import RATE_KEYS

    admin = AdminClient(kafka_conf(cluster.bootstrap_servers))
    keys = (*RATE_KEYS, CORDONED_LOG_DIRS)
    found: dict[int, dict[str, str]] = {}
    asked = {  # one broker per request, as Kafka wants it; all asked at once
        broker: next(
            iter(
                admin.describe_configs(
                    [ConfigResource("broker", str(broker))], request_timeout=10
                ).values()
            )
        )
        for broker in cluster.broker_ids
    }
    for broker, future in asked.items():
        try:
            entries = future.result(timeout=15)
        except TimeoutError as exc:
            raise TimeoutError(f"broker {broker} did not answer within 15 s") from exc
        rates = {
            key: str(entries[key].value)
            for key in keys
            if key in entries
            and entries[key].value is not None
            and entries[key].source
            in (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_BROKER_CONFIG.value)
        }
        if rates:
            found[broker] = rates
    return found


def _revive(cluster: Any) -> None:
    for broker_id in cluster.broker_ids:
        if not cluster.is_alive(broker_id):
            cluster.restart(broker_id)


def _remove_throttle_rates(cluster: Any) -> None:
    """Delete both replication throttle rates and the cordon on every broker (one broker per
    request: a broker's dynamic config is changed on that broker). A broker just back
    (restarted or resumed) may be missing for a moment from the metadata a fresh client
    bootstraps from: then a new client asks again, for up to 30 s."""
    from kafka.errors import UnknownBrokerIdError

    deadline = time.monotonic() + 30
    while True:
        try:
            _remove_throttle_rates_once(cluster)
            return
        except UnknownBrokerIdError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def _remove_throttle_rates_once(cluster: Any) -> None:
    from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

    from manager.executor.cordons import CORDONED_LOG_DIRS
    from manager.throttling.ownership import RATE_KEYS

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        for broker_id in cluster.broker_ids:
            keys = (*RATE_KEYS, CORDONED_LOG_DIRS)
            delete = {key: (AlterConfigOp.DELETE, None) for key in keys}
            results = admin.alter_configs(
                [ConfigResource(ConfigResourceType.BROKER, str(broker_id), configs=delete)],
                incremental=True,
                raise_on_unknown=False,
            )
            failed = [o for by_name in results.values() for o in by_name.values() if o != "OK"]
            assert not failed, f"removing broker {broker_id}'s throttle rates: {failed}"
    finally:
        admin.close()
