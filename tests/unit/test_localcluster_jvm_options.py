"""The Kafka nodes' JVM options: light for the tests, as Kafka's launcher has them for a
benchmark of the clients' latency; a collection log for every node. Without a JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmedic.localcluster import process
from kmedic.localcluster.configs import ClusterSpec
from kmedic.localcluster.layout import plan_nodes


def test_a_server_jvm_starts_as_kafkas_launcher_starts_a_node() -> None:
    def command(server: bool) -> list[str]:
        return process.java_command(
            classpath=[Path("/jars/a.jar")],
            main_class="kafka.Kafka",
            args=["server.properties"],
            heap_mb=256,
            system_properties={},
            server=server,
        )

    light, server = command(False), command(True)
    assert set(process.LIGHT_JVM_OPTIONS) <= set(light)
    assert not set(process.SERVER_JVM_OPTIONS) & set(light)
    assert set(process.SERVER_JVM_OPTIONS) <= set(server)
    assert not set(process.LIGHT_JVM_OPTIONS) & set(server)  # C2 and G1: nothing light left


@pytest.mark.parametrize("server_jvms", [False, True])
def test_each_kafka_node_logs_its_collections_and_runs_the_jvms_its_spec_asks_for(
    tmp_path: Path, server_jvms: bool
) -> None:
    spec = ClusterSpec(brokers=2, controllers=1, server_jvms=server_jvms)
    nodes = plan_nodes(spec, tmp_path, None)
    kafka = [n for n in nodes if n.kind in ("broker", "controller")]
    assert {n.kind for n in kafka} == {"broker", "controller"}
    for node in kafka:
        assert f"-Xlog:gc:file={Path(node.directory) / 'gc.log'}:time,uptime" in node.command
        assert ("-XX:+UseG1GC" in node.command) is server_jvms, node.name
        assert ("-XX:+UseSerialGC" in node.command) is not server_jvms, node.name
    [zookeeper] = [n for n in nodes if n.kind == "zookeeper"]
    assert "-XX:+UseSerialGC" in zookeeper.command  # not on the clients' path: light always
