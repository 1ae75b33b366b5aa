"""A real Kafka cluster on loopback: one ZooKeeper, one or more KRaft controllers, N brokers.

Used by the demo and by every integration test. Each node is a JVM started from the jars that
`make bootstrap` fetched; each broker carries the Prometheus JMX exporter java agent on its own
port. A state file in the work directory lets another process (``kmedic cluster status|down``)
find and stop the nodes.

A shaped cluster (``ClusterSpec.nic_mbps``) runs inside a network namespace of its own, each
broker's link held to that rate (netns.py): its clients must run there too (``network()``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster, KafkaClientSettings, confluent_conf
from kmedic.localcluster import class_sharing, configs, links, netns, process
from kmedic.localcluster.configs import ClusterSpec
from kmedic.localcluster.layout import Node, log4j_path, plan_nodes
from kmedic.localcluster.security import ADMIN, ClusterSecurity, grant_role_acls
from kmedic.logging import get_logger
from kmedic.paths import jvm_jars

log = get_logger(__name__)

STATE_FILE = "state.json"
START_TIMEOUT_S = 120.0


class LocalCluster:
    """Handle on a running (or stopped) local cluster. Create with ``start`` or ``load``."""

    def __init__(
        self,
        workdir: Path,
        cluster_id: str,
        nodes: list[Node],
        owned: bool,
        security: ClusterSecurity | None = None,
        nic_mbps: int | None = None,
        kafka_jars: str = configs.KAFKA_NEWEST,
    ) -> None:
        self.workdir = workdir
        self.cluster_id = cluster_id
        self._nodes = nodes
        self._owned = owned
        # Set on a secured cluster: its CA, certificates and SCRAM users' password files.
        self.security = security
        # Set on a shaped cluster: each broker's link speed, and the namespace it runs in.
        self.nic_mbps = nic_mbps
        self.namespace = netns.Namespace(netns.name_for(workdir)) if nic_mbps is not None else None
        self.kafka_jars = kafka_jars  # the Kafka release its nodes run

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        spec: ClusterSpec | None = None,
        workdir: Path | None = None,
        *,
        stop_at_exit: bool = True,
        timeout: float = START_TIMEOUT_S,
    ) -> LocalCluster:
        """Format and start a fresh cluster in ``workdir`` (wiped first) and wait until every
        broker is registered. With ``stop_at_exit`` the nodes die with this process."""
        spec = spec or ClusterSpec()
        if workdir is None:
            workdir = Path(tempfile.mkdtemp(prefix="kmedic-cluster-"))
        workdir = workdir.resolve()
        existing = cls._try_load(workdir)
        if existing is not None and any(n.running() for n in existing._nodes):
            raise KmedicError(f"a cluster is already running in {workdir}; stop it first")
        if workdir.exists():
            shutil.rmtree(workdir)
        workdir.mkdir(parents=True)
        security = ClusterSecurity.create(workdir / "security") if spec.secure else None
        cluster = cls(
            workdir,
            configs.new_cluster_id(),
            plan_nodes(spec, workdir, security),
            stop_at_exit,
            security,
            spec.nic_mbps,
            spec.kafka_jars,
        )
        cluster._format()
        cluster._save()
        if stop_at_exit:
            atexit.register(cluster.stop)
        try:
            if cluster.namespace is not None and spec.nic_mbps is not None:
                netns.Namespace.create(
                    cluster.namespace.name,
                    [n.host for n in cluster._nodes],
                    [b.host for b in cluster.brokers],
                    spec.nic_mbps,
                    # the agent beside a broker scrapes its exporter over its host's loopback
                    {b.host: b.exporter_port for b in cluster.brokers if b.exporter_port},
                )
            for node in cluster._nodes:
                cluster._launch(node)
            cluster._wait_ready(cluster._nodes, timeout)
            if security is not None:
                grant_role_acls(confluent_conf(cluster.client, {"log_level": 0}))
        except BaseException:
            cluster.stop()
            raise
        log.info(
            "cluster_started",
            workdir=str(workdir),
            bootstrap=cluster.bootstrap_servers,
            zookeeper=cluster.zk_connect,
            brokers=cluster.broker_ids,
            secure=security is not None,
            nic_mbps=spec.nic_mbps,
            namespace=cluster.namespace.name if cluster.namespace is not None else None,
        )
        return cluster

    @classmethod
    def load(cls, workdir: Path) -> LocalCluster:
        """The cluster described by ``workdir``'s state file (started by another process)."""
        cluster = cls._try_load(workdir.resolve())
        if cluster is None:
            raise KmedicError(f"no local cluster in {workdir} (no {STATE_FILE}); run `cluster up`")
        return cluster

    @classmethod
    def _try_load(cls, workdir: Path) -> LocalCluster | None:
        path = workdir / STATE_FILE
        if not path.exists():
            return None
        try:
            state = json.loads(path.read_text())
            nodes = [Node(**n) for n in state["nodes"]]
            security = state.get("security")
            return cls(
                workdir,
                state["cluster_id"],
                nodes,
                owned=False,
                security=ClusterSecurity.from_state(security) if security else None,
                nic_mbps=state.get("nic_mbps"),
                kafka_jars=state.get("kafka_jars", configs.KAFKA_NEWEST),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise KmedicError(f"{path} is not a valid cluster state file: {exc}") from exc

    # ---- addresses ----------------------------------------------------------------------

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self._nodes if n.kind == "broker"]

    @property
    def node_directories(self) -> list[Path]:
        """Every Kafka node's directory (brokers and controllers): its logs, its config."""
        return [Path(n.directory) for n in self._nodes if n.kind in ("broker", "controller")]

    @property
    def broker_ids(self) -> list[int]:
        return [n.node_id for n in self.brokers]

    @property
    def controller_ids(self) -> list[int]:
        return [n.node_id for n in self._nodes if n.kind == "controller"]

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{n.host}:{n.port}" for n in self.brokers)

    def client_as(self, user: str) -> Cluster:
        """How a client reaches this cluster as ``user``: the bootstrap string of a plaintext
        cluster, the full ``kafka:`` settings of a secured one (``user`` must exist there)."""
        if self.security is None:
            return self.bootstrap_servers
        return self.security.client(self.bootstrap_servers, user)

    @property
    def client(self) -> Cluster:
        """The operator's (admin's) connection: what the cluster's own checks use."""
        return self.client_as(ADMIN)

    def kafka_section(self, user: str) -> dict[str, Any]:
        """A role config's ``kafka:`` section for ``user`` (passwords by file, never inline)."""
        settings = self.client_as(user)
        if not isinstance(settings, KafkaClientSettings):
            return {"bootstrap": settings}
        return settings.model_dump(mode="json", exclude_defaults=True)

    @property
    def zk_connect(self) -> str:
        zookeeper = self._node("zookeeper", 0)
        return f"{zookeeper.host}:{zookeeper.port}"

    def broker(self, broker_id: int) -> Node:
        return self._node("broker", broker_id)

    def rack(self, broker_id: int) -> str:
        rack = self.broker(broker_id).rack
        assert rack is not None
        return rack

    def exporter_url(self, broker_id: int) -> str:
        broker = self.broker(broker_id)
        return f"http://{broker.host}:{broker.exporter_port}/metrics"

    def network(self) -> contextlib.AbstractContextManager[None]:
        """The block's network: a shaped cluster's namespace (the calling thread, and the
        threads and processes it starts meanwhile, run there and reach the nodes); for any
        other cluster, this machine's, as it is."""
        if self.namespace is None:
            return contextlib.nullcontext()
        return self.namespace.entered()

    # ---- network faults (a shaped cluster only: links.py) ----------------------------------

    def cut_from_controllers(self, broker_id: int) -> str:
        """Drop every packet between ``broker_id`` and the controllers, both ways: the broker
        keeps serving its clients and is fenced once its session times out. The cut's name."""
        wire = self._links()
        node = self.broker(broker_id)
        controllers = [n.host for n in self._nodes if n.kind == "controller"]
        cut = links.from_controllers(broker_id, wire.mark(node.host), controllers)
        wire.cut(cut)
        log.info("broker_cut_from_controllers", broker=broker_id, cut=cut.name)
        return cut.name

    def cut_between(self, a: int, b: int) -> str:
        """Drop every packet between brokers ``a`` and ``b``; each still reaches the rest."""
        wire = self._links()
        ends = [(x, wire.mark(self.broker(x).host), self.broker(x).host) for x in (a, b)]
        cut = links.between(ends[0], ends[1])
        wire.cut(cut)
        log.info("brokers_cut_apart", brokers=[a, b], cut=cut.name)
        return cut.name

    def cut_host(self, broker_id: int, clients: list[str] | None = None) -> str:
        """Cut ``broker_id``'s host off the network, its processes still running: the broker
        reaches no other node and no node or client reaches it (the controllers fence it once
        its session times out); the clients of cgroups ``clients`` (its agent, started with
        ``client_group``) reach no broker. The cut's name."""
        wire = self._links()
        node = self.broker(broker_id)
        others = [n.host for n in self._nodes if n.host != node.host]
        cut = links.host_off((broker_id, wire.mark(node.host), node.host), others, clients or [])
        wire.cut(cut)
        log.info("host_cut_off", broker=broker_id, clients=clients or [], cut=cut.name)
        return cut.name

    def client_group(self, group: str) -> Callable[[], None]:
        """A ``preexec_fn`` for a client process (a manager) whose connections a cut may find
        later (``cut_client``): it joins cgroup ``group`` of the namespace."""
        return self._links().client(group)

    def cut_client(self, group: str, broker_ids: list[int]) -> str:
        """Drop every packet between the client in cgroup ``group`` and ``broker_ids``; it
        still reaches every other broker, and they it. The cut's name."""
        hosts = [self.broker(b).host for b in broker_ids]
        name = f"{group}-brokers-{'-'.join(map(str, sorted(broker_ids)))}"
        cut = links.client_from(group, name, hosts)
        self._links().cut(cut)
        log.info("client_cut", client=group, brokers=broker_ids, cut=name)
        return name

    def mend(self, name: str | None = None) -> list[str]:
        """Remove the cut ``name`` (or every cut); the names removed."""
        mended = self._links().mend(name)
        if mended:
            log.info("cuts_mended", cuts=mended)
        return mended

    def set_link_rate(self, broker_id: int, mbps: float | None = None) -> None:
        """Hold ``broker_id``'s link to ``mbps`` Mbit/s each way (None: the cluster's rate)."""
        wire = self._links()
        wire.set_rate(self.broker(broker_id).host, wire.mbps if mbps is None else mbps)
        log.info("link_rate_set", broker=broker_id, mbps=mbps or wire.mbps)

    def _links(self) -> links.Links:
        if self.namespace is None or self.nic_mbps is None:
            raise KmedicError(
                "network faults need a shaped cluster (started with a link speed, "
                "`kmedic cluster up --nic-mbps N`): its nodes run in a namespace of their own"
            )
        return links.Links(self.namespace, [b.host for b in self.brokers], self.nic_mbps)

    def data_dir(self, broker_id: int) -> Path:
        return Path(self.broker(broker_id).directory) / "data"

    def log_dirs(self, broker_id: int) -> list[Path]:
        """The broker's log directories, as its configuration names them."""
        for line in Path(self.broker(broker_id).config).read_text().splitlines():
            if line.startswith("log.dirs="):
                return [Path(d) for d in line.split("=", 1)[1].split(",")]
        return [self.data_dir(broker_id)]

    def break_log_dir(self, broker_id: int, index: int) -> Path:
        """Make one log directory unusable, as a failed disk is: the directory is moved aside
        and a plain file takes its place, so the broker's next file operation in it fails
        (Kafka then takes the directory offline). Returns the path."""
        path = self.log_dirs(broker_id)[index]
        path.rename(path.with_name(path.name + ".failed"))
        path.write_text("this log directory failed on purpose (LocalCluster.break_log_dir)\n")
        return path

    def repair_log_dir(self, broker_id: int, index: int) -> None:
        """Undo ``break_log_dir`` with an empty, formatted directory, as a replaced disk; the
        broker brings it online only when it restarts."""
        path = self.log_dirs(broker_id)[index]
        if path.is_file():
            path.unlink()
            shutil.rmtree(path.with_name(path.name + ".failed"), ignore_errors=True)
            path.mkdir()
            self._format(self.broker(broker_id))

    def wipe(self, broker_id: int) -> None:
        """A stopped broker's host replaced: every log directory emptied and formatted again,
        so that it starts as a new, empty broker of the same id (its replicas gone)."""
        if self.is_alive(broker_id):
            raise KmedicError(f"broker {broker_id} is running: stop it before wiping its disks")
        for path in self.log_dirs(broker_id):
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
        self._format(self.broker(broker_id))

    # ---- lifecycle ----------------------------------------------------------------------

    def is_alive(self, broker_id: int) -> bool:
        return self._running(self.broker(broker_id))

    def kill(self, broker_id: int) -> None:
        """SIGKILL one broker, as a crash would."""
        self._end(self.broker(broker_id), signal.SIGKILL)
        log.info("broker_killed", broker=broker_id)

    def stop_broker(self, broker_id: int) -> None:
        """SIGTERM one broker, as a routine restart does: a controlled shutdown that moves its
        leaderships away first (SIGKILL after 30 s)."""
        self._end(self.broker(broker_id), signal.SIGTERM)
        log.info("broker_stopped", broker=broker_id)

    def pause(self, broker_id: int) -> None:
        """SIGSTOP one broker: a process that hangs (a long GC pause) without dying."""
        self._pause(self.broker(broker_id))
        log.info("broker_paused", broker=broker_id)

    def resume(self, broker_id: int) -> None:
        if self._resume(self.broker(broker_id)):
            log.info("broker_resumed", broker=broker_id)

    def kill_controller(self, node_id: int) -> None:
        """SIGKILL one KRaft controller (a voter of the metadata quorum)."""
        self._end(self._node("controller", node_id), signal.SIGKILL)
        log.info("controller_killed", controller=node_id)

    def restart_controller(self, node_id: int, *, timeout: float = START_TIMEOUT_S) -> None:
        node = self._node("controller", node_id)
        if self._running(node):
            raise KmedicError(f"{node.name} is already running")
        self._launch(node)
        self._wait_ready([node], timeout)
        log.info("controller_restarted", controller=node_id)

    def controller_running(self, node_id: int) -> bool:
        return self._running(self._node("controller", node_id))

    def pause_zookeeper(self) -> None:
        """SIGSTOP ZooKeeper: it keeps its connections open and answers nothing, so clients
        see timeouts, and on resume it expires the sessions whose timeout passed meanwhile."""
        self._pause(self._node("zookeeper", 0))
        log.info("zookeeper_paused")

    def resume_zookeeper(self) -> None:
        if self._resume(self._node("zookeeper", 0)):
            log.info("zookeeper_resumed")

    def restart(
        self, broker_id: int, *, timeout: float = START_TIMEOUT_S, wait: bool = True
    ) -> None:
        """Start a stopped broker again on its old port with its old data; ``wait``: until it
        is ready (without, a start the caller holds up - cut off the controllers - returns)."""
        self.restart_many([broker_id], timeout=timeout, wait=wait)

    def restart_many(
        self, broker_ids: list[int], *, timeout: float = START_TIMEOUT_S, wait: bool = True
    ) -> None:
        """Start several stopped brokers at once, then (``wait``) wait for all of them."""
        nodes = [self.broker(b) for b in broker_ids]
        for node in nodes:
            if self._running(node):
                raise KmedicError(f"{node.name} is already running")
        for node in nodes:
            self._launch(node)
        if wait:
            self._wait_ready(nodes, timeout)
        log.info("brokers_restarted" if wait else "brokers_started", brokers=broker_ids)

    def stop(self) -> None:
        """Stop every node (brokers first, ZooKeeper last); leaves no process behind, and no
        namespace."""
        for node in reversed(self._nodes):
            self._end(node, signal.SIGTERM if node.kind != "broker" else signal.SIGKILL)
        if self.namespace is not None:
            self.namespace.remove()
        if self._owned:
            atexit.unregister(self.stop)

    def status(self) -> list[dict[str, Any]]:
        return [
            {
                "node": n.name,
                "id": n.node_id,
                "port": n.port,
                "rack": n.rack,
                "exporter_port": n.exporter_port,
                "pid": n.pid,
                "running": self._running(n),
            }
            for n in self._nodes
        ]

    # ---- internals ----------------------------------------------------------------------

    def _node(self, kind: str, node_id: int) -> Node:
        for n in self._nodes:
            if n.kind == kind and (kind == "zookeeper" or n.node_id == node_id):
                return n
        raise KmedicError(
            f"this cluster has no {kind} {node_id}; brokers are {self.broker_ids}, "
            f"controllers {self.controller_ids}"
        )

    def _save(self) -> None:
        state: dict[str, Any] = {
            "cluster_id": self.cluster_id,
            "nodes": [asdict(n) for n in self._nodes],
            "nic_mbps": self.nic_mbps,
            "kafka_jars": self.kafka_jars,
        }
        if self.security is not None:
            state["security"] = self.security.to_state()
        tmp = self.workdir / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        tmp.replace(self.workdir / STATE_FILE)

    def _format(self, only: Node | None = None) -> None:
        classpath = jvm_jars(self.kafka_jars)
        # SCRAM credentials go into the metadata log's bootstrap records, before any broker
        # exists: there is no unauthenticated moment in which to create them later.
        scram = self.security.scram_arguments() if self.security is not None else []
        for node in [only] if only is not None else self._nodes:
            if node.kind == "zookeeper":
                continue
            cmd = process.java_command(
                classpath=classpath,
                main_class="kafka.tools.StorageTool",
                args=[
                    "format",
                    "-t",
                    self.cluster_id,
                    "-c",
                    node.config,
                    "--ignore-formatted",
                    *scram,
                ],
                heap_mb=128,
                system_properties={"log4j2.configurationFile": str(log4j_path(node))},
                options=class_sharing.jvm_options(self.kafka_jars),
            )
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise KmedicError(
                    f"formatting the storage of {node.name} failed: "
                    f"{(done.stderr or done.stdout).strip()[-800:]}"
                )

    # How a node runs: a process of this machine. A subclass may run the same command line
    # elsewhere (tests/container_cluster.py: in a container) by overriding these five.

    def _launch(self, node: Node) -> None:
        node.pid = process.spawn(
            node.command,
            log_path=node.stdout_file,
            tie_to_parent=self._owned,
            enter=self._enter(node),
        )
        self._save()

    def _enter(self, node: Node) -> Callable[[], None] | None:
        """How a shaped cluster's node joins its namespace; a broker also joins its address's
        cgroup, so the connections it opens go through its own link (netns.py)."""
        if self.namespace is None:
            return None
        return self.namespace.child_setup(node.host if node.kind == "broker" else None)

    def _running(self, node: Node) -> bool:
        return node.running()

    def _end(self, node: Node, sig: signal.Signals) -> None:
        """Stop a node with ``sig`` and wait until it is gone (SIGKILL after 30 s)."""
        if node.pid is not None:
            process.kill(node.pid, node.config, sig)

    def _pause(self, node: Node) -> None:
        if node.pid is None or not node.running():
            raise KmedicError(f"{node.name} is not running")
        os.kill(node.pid, signal.SIGSTOP)

    def _resume(self, node: Node) -> bool:
        """SIGCONT a node; False when it is not running."""
        if node.pid is None or not node.running():
            return False
        os.kill(node.pid, signal.SIGCONT)
        return True

    def _wait_ready(self, nodes: list[Node], timeout: float) -> None:
        with self.network():
            self._wait_listening(nodes, timeout)

    def _wait_listening(self, nodes: list[Node], timeout: float) -> None:
        for node in nodes:

            def ready(node: Node = node) -> bool:
                if not self._running(node):
                    raise KmedicError(
                        f"{node.name} exited during start-up; see {node.stdout_file} "
                        f"and {node.log_file}"
                    )
                if not process.port_open(node.port, node.host):
                    return False
                return node.exporter_port is None or process.port_open(
                    node.exporter_port, node.host
                )

            process.wait_until(ready, timeout=timeout, what=node.name, log_path=node.log_file)
        brokers = [n for n in nodes if n.kind == "broker"]
        if brokers:
            wanted = {n.node_id for n in brokers}
            process.wait_until(
                lambda: wanted <= self._registered_brokers(),
                timeout=timeout,
                what=f"brokers {sorted(wanted)} to register with the controller",
            )

    def _registered_brokers(self) -> set[int]:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(confluent_conf(self.client, {"log_level": 0}))
        try:
            meta = admin.list_topics(timeout=2)
        except Exception:  # any client error means "not ready yet"
            return set()
        return {int(b) for b in meta.brokers}
