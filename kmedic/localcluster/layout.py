"""Where each node of a local cluster lives and how it is started (pure but for creating its
directories and config files): ZooKeeper, the KRaft controllers (ids 100, 101, ...; one, or a
quorum of three), and the brokers with the JMX exporter agent.

Every node listens on 127.0.0.1 on a free port, or, in a shaped cluster (``nic_mbps``), on an
address of its own inside the cluster's namespace, on its usual port: brokers 127.0.1.<id>:9092
(exporter :7071), controllers 127.0.3.<n>:9093, ZooKeeper 127.0.2.1:2181."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kmedic.localcluster import class_sharing, configs, process
from kmedic.localcluster.configs import CONTROLLER_ID, HOST, ClusterSpec, Endpoint
from kmedic.localcluster.security import ADMIN, ClusterSecurity
from kmedic.paths import config_file, jvm_jars


@dataclass
class Node:
    """One JVM of the cluster. ``kind`` is zookeeper, controller or broker."""

    kind: str
    node_id: int
    port: int
    directory: str
    config: str
    command: list[str]
    pid: int | None = None
    rack: str | None = None
    exporter_port: int | None = None
    host: str = HOST

    @property
    def log_file(self) -> Path:
        return Path(self.directory) / (
            "zookeeper.log" if self.kind == "zookeeper" else "server.log"
        )

    @property
    def stdout_file(self) -> Path:
        return Path(self.directory) / "stdout.log"

    @property
    def name(self) -> str:
        if self.kind == "broker" or (self.kind == "controller" and self.node_id != CONTROLLER_ID):
            return f"{self.kind} {self.node_id}"
        return self.kind

    def running(self) -> bool:
        # The config path is unique to this node of this cluster: a recycled pid never matches.
        return process.is_running(self.pid, self.config)


def node_directory(kind: str, node_id: int) -> str:
    """The first controller's directory is ``controller`` (as with a single one)."""
    if kind == "broker":
        return f"broker-{node_id}"
    return kind if node_id == CONTROLLER_ID else f"{kind}-{node_id}"


def log4j_path(node: Node) -> Path:
    return Path(node.directory) / "log4j2.properties"


@dataclass(frozen=True)
class Addresses:
    """Where each node listens."""

    zookeeper: Endpoint
    voters: dict[int, Endpoint]
    brokers: dict[int, Endpoint]
    exporters: dict[int, int]

    @classmethod
    def of(cls, spec: ClusterSpec) -> Addresses:
        if spec.nic_mbps is not None:
            return cls.shaped(spec)
        first = 1 + spec.controllers
        ports = process.free_ports(first + 2 * spec.brokers)
        return cls(
            Endpoint(HOST, ports[0]),
            {
                c: Endpoint(HOST, p)
                for c, p in zip(spec.controller_ids, ports[1:first], strict=True)
            },
            {
                b: Endpoint(HOST, p)
                for b, p in zip(spec.broker_ids, ports[first : first + spec.brokers], strict=True)
            },
            dict(zip(spec.broker_ids, ports[first + spec.brokers :], strict=True)),
        )

    @classmethod
    def shaped(cls, spec: ClusterSpec) -> Addresses:
        return cls(
            Endpoint("127.0.2.1", 2181),
            {c: Endpoint(f"127.0.3.{n}", 9093) for n, c in enumerate(spec.controller_ids, 1)},
            {b: Endpoint(f"127.0.1.{b}", 9092) for b in spec.broker_ids},
            dict.fromkeys(spec.broker_ids, 7071),
        )


def plan_nodes(spec: ClusterSpec, workdir: Path, security: ClusterSecurity | None) -> list[Node]:
    """Lay out directories and config files and build each node's command line."""
    at = Addresses.of(spec)
    voters = at.voters
    kafka_cp = jvm_jars(spec.kafka_jars)
    nodes: list[Node] = []

    zk_dir = workdir / "zookeeper"
    (zk_dir / "data").mkdir(parents=True)
    zk_cfg = zk_dir / "zoo.cfg"
    zk_cfg.write_text(
        configs.zookeeper_properties(at.zookeeper.port, str(zk_dir / "data"), at.zookeeper.host)
    )
    (zk_dir / "logback.xml").write_text(configs.logback_xml(str(zk_dir / "zookeeper.log")))
    zk_cmd = process.java_command(
        classpath=jvm_jars("zookeeper"),
        main_class="org.apache.zookeeper.server.ZooKeeperServerMain",
        args=[str(zk_cfg)],
        heap_mb=spec.zookeeper_heap_mb,
        system_properties={
            "logback.configurationFile": str(zk_dir / "logback.xml"),
            "zookeeper.admin.enableServer": "false",
        },
    )
    nodes.append(
        Node(
            "zookeeper", 0, at.zookeeper.port, str(zk_dir), str(zk_cfg), zk_cmd,
            host=at.zookeeper.host,
        )
    )  # fmt: skip

    def kafka_node(
        kind: str,
        node_id: int,
        listens: Endpoint,
        props: str,
        exporter_port: int | None,
        rack: str | None,
    ) -> Node:
        node_dir = workdir / node_directory(kind, node_id)
        node_dir.mkdir(parents=True)
        cfg = node_dir / "server.properties"
        cfg.write_text(props)
        cfg.chmod(0o600)  # a secured broker's file holds the inter-broker password
        requests = str(node_dir / "requests.log") if spec.request_log else None
        (node_dir / "log4j2.properties").write_text(
            configs.log4j2_properties(str(node_dir / "server.log"), requests)
        )
        agent = None
        if exporter_port is not None:
            exporter = jvm_jars("jmx-exporter")[0]
            agent = f"{exporter}={listens.host}:{exporter_port}:{config_file('jmx-exporter.yaml')}"
        cmd = process.java_command(
            classpath=kafka_cp,
            main_class="kafka.Kafka",
            args=[str(cfg)],
            heap_mb=spec.controller_heap_mb if kind == "controller" else spec.broker_heap_mb,
            system_properties={"log4j2.configurationFile": str(node_dir / "log4j2.properties")},
            java_agent=agent,
            # Every collection's pause, in the node's directory: a stall of the clients is
            # then told from a stop of the broker.
            options=(
                *class_sharing.jvm_options(spec.kafka_jars),
                f"-Xlog:gc:file={node_dir / 'gc.log'}:time,uptime",
            ),
            server=spec.server_jvms,
        )
        return Node(
            kind, node_id, listens.port, str(node_dir), str(cfg), cmd, None, rack, exporter_port,
            listens.host,
        )  # fmt: skip

    for node_id, listens in voters.items():
        props = configs.controller_properties(
            listens.port,
            str(workdir / node_directory("controller", node_id) / "data"),
            spec.controller_config,
            super_user=ADMIN if security is not None else None,
            node_id=node_id,
            voters=voters,
            host=listens.host,
            kafka_defaults=spec.kafka_defaults,
        )
        nodes.append(kafka_node("controller", node_id, listens, props, None, None))
    for broker_id, listens in at.brokers.items():
        rack = spec.rack_of(broker_id)
        props = configs.broker_properties(
            broker_id,
            port=listens.port,
            controller_port=voters[CONTROLLER_ID].port,
            rack=rack,
            data_dir=",".join(
                str(workdir / f"broker-{broker_id}" / ("data" if n == 1 else f"data-{n}"))
                for n in range(1, spec.log_dirs + 1)
            ),
            broker_count=spec.brokers,
            overrides=spec.broker_config,
            secure=security.listener() if security is not None else None,
            voters=voters,
            host=listens.host,
            shaped=spec.nic_mbps is not None,
            kafka_defaults=spec.kafka_defaults,
        )
        nodes.append(kafka_node("broker", broker_id, listens, props, at.exporters[broker_id], rack))
    return nodes
