"""The test cluster in containers (KMEDIC_TEST_CLUSTER=testcontainers).

The same cluster as kmedic.localcluster — ZooKeeper, a KRaft controller, brokers on racks, the
JMX exporter on each broker, the same configs, ports and data directories — with each node run
by testcontainers in a container of the node image (tests/images/kafka/Dockerfile, built from
the bootstrapped jars by `scripts/image.py --kafka`). The containers share the host's network
(the nodes advertise 127.0.0.1) and mount the cluster's work directory and configs/ at their
own paths, so agents read a broker's data directory as they do beside a process.
"""

from __future__ import annotations

import contextlib
import signal
import time
from typing import Any

from kmedic.errors import KmedicError
from kmedic.localcluster.cluster import LocalCluster
from kmedic.localcluster.layout import Node
from kmedic.paths import CONFIGS, jvm_dir

NODE_IMAGE = "kmedic-kafka:latest"
IMAGE_JVM_DIR = "/opt/jvm"  # where the node image keeps the jar groups
STOP_TIMEOUT_S = 30.0


class ContainerCluster(LocalCluster):
    """LocalCluster whose nodes run in containers; start with ``ContainerCluster.start``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._containers: dict[str, Any] = {}

    def _launch(self, node: Node) -> None:
        from testcontainers.core.container import DockerContainer

        self._remove(node)
        host_jars = str(jvm_dir())
        command = [arg.replace(host_jars, IMAGE_JVM_DIR) for arg in node.command]
        # The node's output goes to the file a process node writes, for the same error messages.
        shell = ["sh", "-c", 'exec "$@" >>"$0" 2>&1', str(node.stdout_file), *command]
        container = (
            DockerContainer(NODE_IMAGE)
            .with_command(shell)
            .with_kwargs(network_mode="host")
            .with_volume_mapping(str(self.workdir), str(self.workdir), "rw")
            .with_volume_mapping(str(CONFIGS), str(CONFIGS), "ro")
        )
        container.start()
        self._containers[node.name] = container
        self._save()

    def _running(self, node: Node) -> bool:
        container = self._containers.get(node.name)
        if container is None:
            return False
        wrapped = container.get_wrapped_container()
        try:
            wrapped.reload()
        except Exception:  # removed meanwhile
            return False
        return wrapped.status in ("running", "paused")

    def _end(self, node: Node, sig: signal.Signals) -> None:
        if not self._running(node):
            self._remove(node)
            return
        wrapped = self._containers[node.name].get_wrapped_container()
        wrapped.kill(signal=sig.name)
        deadline = time.monotonic() + (STOP_TIMEOUT_S if sig != signal.SIGKILL else 10.0)
        while self._running(node) and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._running(node):
            wrapped.kill(signal="SIGKILL")
            wrapped.wait(timeout=10)
        self._remove(node)

    def _pause(self, node: Node) -> None:
        if not self._running(node):
            raise KmedicError(f"{node.name} is not running")
        self._containers[node.name].get_wrapped_container().kill(signal="SIGSTOP")

    def _resume(self, node: Node) -> bool:
        if not self._running(node):
            return False
        self._containers[node.name].get_wrapped_container().kill(signal="SIGCONT")
        return True

    def _remove(self, node: Node) -> None:
        container = self._containers.pop(node.name, None)
        if container is not None:
            with contextlib.suppress(Exception):  # already gone
                container.get_wrapped_container().remove(force=True)
