"""KMEDIC_TEST_CLUSTER=testcontainers really runs the cluster in containers: every node is a
container of the node image started by testcontainers (with the jars where the image keeps
them), none was started as a process, and a killed broker's container is gone until its
restart. `make test` runs this module in its container-cluster run (`make containers`); the
main run, on processes, skips it."""

from __future__ import annotations

import os
from typing import Any

import pytest

# The first test of the run builds the node image (about a minute the first time).
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1200)]


@pytest.fixture
def container_cluster(healthy_cluster: Any) -> Any:
    if os.environ.get("KMEDIC_TEST_CLUSTER") != "testcontainers":
        pytest.skip("the container cluster runs in `make containers` (KMEDIC_TEST_CLUSTER)")
    return healthy_cluster


def _node_containers() -> dict[str, Any]:
    """Running containers of the node image, by their node's config file (the command's last
    argument)."""
    import docker  # type: ignore[import-untyped]
    from container_cluster import NODE_IMAGE

    found = {}
    for container in docker.from_env().containers.list():
        if NODE_IMAGE.split(":")[0] in " ".join(container.image.tags):
            found[container.attrs["Config"]["Cmd"][-1]] = container
    return found


def test_every_node_is_a_container_of_the_node_image(container_cluster: Any) -> None:
    nodes = container_cluster._nodes
    containers = _node_containers()
    assert {n.config for n in nodes} <= set(containers), "a node without its container"
    for node in nodes:
        assert node.pid is None, f"{node.name} was started as a process"
        assert "/opt/jvm/" in " ".join(containers[node.config].attrs["Config"]["Cmd"])


def test_a_killed_broker_is_a_removed_container_until_its_restart(container_cluster: Any) -> None:
    config = container_cluster.broker(2).config
    container_cluster.kill(2)
    assert not container_cluster.is_alive(2)
    assert config not in _node_containers()
    container_cluster.restart(2)
    assert container_cluster.is_alive(2)
    assert config in _node_containers()
