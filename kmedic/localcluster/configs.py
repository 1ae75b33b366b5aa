"""Configuration files of the local cluster's nodes: pure text rendering, no I/O.

The settings favour a laptop-sized cluster that still behaves like production where kmedic
looks: real KRaft quorum, racks, replication, ISR shrinking when a broker dies. Timeouts are
shortened so a dead broker is fenced in seconds rather than the production defaults' tens.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from kmedic.errors import ConfigError

CONTROLLER_ID = 100
HOST = "127.0.0.1"
# The Kafka releases a local cluster runs: the jar groups of configs/jvm-artifacts.toml.
KAFKA_NEWEST = "kafka"  # 4.4, the default
KAFKA_4_1 = "kafka-4.1"  # the 4.1 line, still tested
KAFKA_LINES = (KAFKA_NEWEST, KAFKA_4_1)
KAFKA_RELEASES = {"4.4": KAFKA_NEWEST, "4.1": KAFKA_4_1}  # as `cluster up --kafka` names them


class Endpoint(NamedTuple):
    """Where a node listens."""

    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


# What brokers use among themselves on a secured cluster; clients may use either SCRAM.
INTER_BROKER_MECHANISM: Final = "SCRAM-SHA-512"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass(frozen=True)
class ClusterSpec:
    """What to start. Broker ids are 1..brokers; racks are assigned round-robin unless
    ``rack_map`` names a rack per broker id."""

    brokers: int = 4
    # KRaft controllers (voters), ids CONTROLLER_ID, CONTROLLER_ID + 1, ...: 1, or 3 for a
    # quorum that survives one loss.
    controllers: int = 1
    racks: tuple[str, ...] = ("/r1", "/r2")
    rack_map: dict[int, str] = field(default_factory=dict)
    # Extra or changed server properties, e.g. {"broker.session.timeout.ms": "30000"}.
    controller_overrides: dict[str, str] = field(default_factory=dict)
    broker_overrides: dict[str, str] = field(default_factory=dict)
    # The cluster-wide min.insync.replicas (None: Kafka's 1), written into every node's
    # config. Not the brokers' alone: with eligible leader replicas (KIP-966; on by default in
    # a new Kafka 4.1+ cluster) the controllers write the cluster-level default from their own
    # config, and that default, not a broker's server.properties, is what a topic without a
    # setting of its own gets (tests/integration/test_unsafe_topics.py shows it).
    min_insync_replicas: int | None = None
    # The controllers' and brokers' JVMs as Kafka's launcher starts them (G1, C2), not light
    # (C1, the serial collector: less CPU on two shared cores); `bench_clients --jvm server`
    # (process.SERVER_JVM_OPTIONS).
    server_jvms: bool = False
    broker_heap_mb: int = 384
    controller_heap_mb: int = 256
    zookeeper_heap_mb: int = 128
    # SASL_SSL-only client listeners, SCRAM users, a generated CA (see localcluster.security).
    secure: bool = False
    # Log directories per broker (JBOD): ``data``, then ``data-2``, ``data-3``...
    log_dirs: int = 1
    # A network-bound cluster: every node on its own address in a network namespace of the
    # cluster's own, each broker's link shaped to this many Mbit/s each way (netns.py).
    nic_mbps: int | None = None
    # Which Kafka release the nodes run (KAFKA_LINES).
    kafka_jars: str = KAFKA_NEWEST
    # Nodes at Kafka's own defaults (the benches' "as shipped"): none of the local cluster's
    # tunings (BROKER_TUNINGS: heartbeats, ISR lag and segments for quick tests;
    # SHAPED_REPLICATION on a shaped link; the controller's 6 s broker session);
    # ``broker_overrides`` and ``controller_overrides`` still apply.
    kafka_defaults: bool = False
    # Each node's requests from kmedic's writers (client ids ``kmedic-executor-<instance>``,
    # ``kmedic-audit-<instance>``) logged by Kafka's own request logger to ``requests.log``
    # in the node's directory: what the brokers saw a manager send, and when
    # (composition.request_log reads them).
    request_log: bool = False

    def __post_init__(self) -> None:
        if self.kafka_jars not in KAFKA_LINES:
            raise ConfigError(f"kafka_jars must be one of {KAFKA_LINES}, got {self.kafka_jars!r}")
        if self.brokers < 1:
            raise ConfigError(f"brokers must be at least 1, got {self.brokers}")
        if not 1 <= self.controllers <= 5:
            raise ConfigError(f"controllers must be 1 to 5, got {self.controllers}")
        if self.log_dirs < 1:
            raise ConfigError(f"log_dirs must be at least 1, got {self.log_dirs}")
        if self.min_insync_replicas is not None and self.min_insync_replicas < 1:
            raise ConfigError(
                f"min_insync_replicas must be at least 1, got {self.min_insync_replicas}"
            )
        if not self.racks and not self.rack_map:
            raise ConfigError("racks must name at least one rack")
        if self.nic_mbps is not None and self.nic_mbps < 1:
            raise ConfigError(f"nic_mbps must be at least 1 Mbit/s, got {self.nic_mbps}")
        if self.nic_mbps is not None and self.secure:
            raise ConfigError(
                "a shaped cluster (nic_mbps) cannot be secured: its brokers' certificates name "
                "127.0.0.1 only, and each shaped broker has an address of its own"
            )
        if self.nic_mbps is not None and self.brokers > 250:
            raise ConfigError(f"a shaped cluster has at most 250 brokers, got {self.brokers}")
        unknown = set(self.rack_map) - set(self.broker_ids)
        if unknown:
            raise ConfigError(f"rack_map names brokers that do not exist: {sorted(unknown)}")

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self.brokers + 1))

    @property
    def controller_ids(self) -> list[int]:
        return list(range(CONTROLLER_ID, CONTROLLER_ID + self.controllers))

    @property
    def broker_config(self) -> dict[str, str]:
        """What each broker's properties take from the spec beyond their own defaults."""
        return self._cluster_wide | self.broker_overrides

    @property
    def controller_config(self) -> dict[str, str]:
        """What each controller's properties take from the spec beyond their own defaults."""
        return self._cluster_wide | self.controller_overrides

    @property
    def _cluster_wide(self) -> dict[str, str]:
        isr = self.min_insync_replicas
        return {} if isr is None else {"min.insync.replicas": str(isr)}

    def rack_of(self, broker_id: int) -> str:
        if broker_id in self.rack_map:
            return self.rack_map[broker_id]
        return self.racks[(broker_id - 1) % len(self.racks)]


def new_cluster_id() -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64 without padding (22 chars).

    Never one starting with '-': the storage tool would read it as an option (Kafka's own
    Uuid.randomUuid avoids those for the same reason)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


@dataclass(frozen=True)
class SecureListener:
    """What a broker's SASL_SSL listener needs: its PEM key store (private key, then
    certificate) and trust store (the CA), and the SCRAM identity brokers use between
    themselves."""

    keystore: str
    truststore: str
    inter_broker_user: str
    inter_broker_password: str


def authorizer_properties(super_user: str) -> dict[str, object]:
    """Kafka's own authorizer on every node, denying what no ACL allows. Brokers reach the
    controller on its plaintext loopback listener as ``ANONYMOUS``, so that principal is a
    super user there (no client listener ever authenticates as it: they are SASL_SSL)."""
    return {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": f"User:{super_user};User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    }


def secure_listener_properties(port: int, secure: SecureListener) -> dict[str, object]:
    """The broker settings of a SASL_SSL-only client listener (the controller's listener
    stays plaintext on loopback: no client ever talks to it)."""
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{secure.inter_broker_user}" password="{secure.inter_broker_password}";'
    )
    # Each enabled mechanism needs its own login entry on the listener (the broker's side of
    # SCRAM reads credentials from the metadata log; the username and password here are what
    # this broker sends when it is the client, between brokers).
    logins = {
        f"listener.name.sasl_ssl.{mechanism.lower()}.sasl.jaas.config": jaas
        for mechanism in SCRAM_MECHANISMS
    }
    return {
        "listeners": f"SASL_SSL://{HOST}:{port}",
        "advertised.listeners": f"SASL_SSL://{HOST}:{port}",
        "inter.broker.listener.name": "SASL_SSL",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": ",".join(SCRAM_MECHANISMS),
        "sasl.mechanism.inter.broker.protocol": INTER_BROKER_MECHANISM,
        **logins,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": secure.keystore,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": secure.truststore,
        **authorizer_properties(secure.inter_broker_user),
    }


def _properties(values: dict[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in values.items())


def quorum_voters(voters: Mapping[int, Endpoint]) -> str:
    """``controller.quorum.voters`` for controller id -> where it listens."""
    return ",".join(f"{node_id}@{at}" for node_id, at in sorted(voters.items()))


def _common(voters: Mapping[int, Endpoint]) -> dict[str, object]:
    return {
        "controller.quorum.voters": quorum_voters(voters),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        # Small thread pools: four brokers share two cores with the rest of the stack.
        "num.network.threads": 2,
        "num.io.threads": 2,
        "background.threads": 2,
        "log.cleaner.threads": 1,
        "num.recovery.threads.per.data.dir": 1,
    }


def controller_properties(
    controller_port: int,
    data_dir: str,
    overrides: dict[str, str] | None = None,
    super_user: str | None = None,
    *,
    node_id: int = CONTROLLER_ID,
    voters: Mapping[int, Endpoint] | None = None,
    host: str = HOST,
    kafka_defaults: bool = False,
) -> str:
    """One controller listening on ``host``; ``voters`` is the whole quorum, this one alone
    by default. ``kafka_defaults``: Kafka's own session timeout (9 s), not the tests' 6 s."""
    session = {} if kafka_defaults else {"broker.session.timeout.ms": 6000}
    return _properties(
        {
            "process.roles": "controller",
            "node.id": node_id,
            "listeners": f"CONTROLLER://{host}:{controller_port}",
            "log.dirs": data_dir,
            **_common(voters or {node_id: Endpoint(host, controller_port)}),
            # The controller fences a broker whose heartbeats stop for this long.
            **session,
            **(authorizer_properties(super_user) if super_user is not None else {}),
            **(overrides or {}),
        }
    )


def broker_properties(
    broker_id: int,
    *,
    port: int,
    controller_port: int,
    rack: str,
    data_dir: str,
    broker_count: int,
    overrides: dict[str, str] | None = None,
    secure: SecureListener | None = None,
    voters: Mapping[int, Endpoint] | None = None,
    host: str = HOST,
    shaped: bool = False,
    kafka_defaults: bool = False,
) -> str:
    rf = min(3, broker_count)
    tunings = {} if kafka_defaults else {**BROKER_TUNINGS, **(SHAPED_REPLICATION if shaped else {})}
    return _properties(
        {
            "process.roles": "broker",
            "node.id": broker_id,
            "listeners": f"PLAINTEXT://{host}:{port}",
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": data_dir,
            "broker.rack": rack,
            **_common(voters or {CONTROLLER_ID: Endpoint(HOST, controller_port)}),
            "num.replica.fetchers": 1,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": 4,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": 1,
            "default.replication.factor": rf,
            "num.partitions": 1,
            "group.initial.rebalance.delay.ms": 0,
            **tunings,
            **(secure_listener_properties(port, secure) if secure is not None else {}),
            **(overrides or {}),
        }
    )


# Heartbeat often and shrink ISRs in seconds, not the production tens; segments small enough
# for the tests' retention and record deletion to take effect. Not Kafka's defaults (2 s, 30 s,
# 1 GB): a bench run "as shipped" leaves them out (ClusterSpec.kafka_defaults).
BROKER_TUNINGS: dict[str, int] = {
    "broker.heartbeat.interval.ms": 1000,
    "replica.lag.time.max.ms": 10000,
    "log.segment.bytes": 16 * 1024 * 1024,
}


# A shaped cluster's brokers replicate as kmedic asks operators to (docs/executor.md), where the
# clients' latency is measured:
# - they measure a replication throttle over one one-second sample (Kafka's default is 11): over
#   11 a throttled copy runs at link speed until the average reaches its rate, then stops, and
#   the link is full for seconds at a time; over 2 for parts of a second; over 1 the rate is the
#   bytes of the second so far over its elapsed part, so the copy is paced fetch by fetch
#   ("Kafka's quota window");
# - a follower refused a fetch retries after 100 ms, and a follower's fetch waits at most 100 ms
#   for data (Kafka's defaults are 1 s and 500 ms): a move's end bumps its partition's leader
#   epoch, a follower that fetches at the new epoch before its leader knows it is refused, and
#   the partition's acks=all writes waited a second for its retry ("A move's end").
# An unshaped cluster keeps Kafka's defaults: its copies are bound by CPU, and a short window
# cannot hold a rate under one fetch per window (1 MB a second), which the tests' stalled copies
# need.
SHAPED_REPLICATION = {
    "replication.quota.window.num": 1,
    "replica.fetch.backoff.ms": 100,
    "replica.fetch.wait.max.ms": 100,
}


def zookeeper_properties(port: int, data_dir: str, host: str = HOST) -> str:
    return _properties(
        {
            "tickTime": 2000,
            "initLimit": 10,
            "syncLimit": 5,
            "dataDir": data_dir,
            "clientPort": port,
            "clientPortAddress": host,
            "maxClientCnxns": 200,
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "ruok,stat,srvr",
            # Short sessions are allowed so tests can exercise session expiry quickly.
            "minSessionTimeout": 2000,
            "maxSessionTimeout": 60000,
        }
    )


# Kafka's request logger at DEBUG logs every request a node completes, one JSON object a
# line; kept to those of kmedic's writers, by their client ids.
KMEDIC_WRITERS = '.*"clientId":"kmedic-(executor|audit)-.*'


def log4j2_properties(log_file: str, requests_file: str | None = None) -> str:
    """Kafka's log4j2 config: one file per node, INFO, the noisy request loggers quiet (or,
    with ``requests_file``, kmedic's writers' requests there, stamped in epoch ms)."""
    if requests_file is not None:
        return _base_log4j2(log_file).replace(
            "logger.request.level = WARN\n",
            "logger.request.level = DEBUG\n"
            "logger.request.additivity = false\n"
            "logger.request.appenderRef.requests.ref = REQUESTS\n"
            "appender.requests.type = File\n"
            "appender.requests.name = REQUESTS\n"
            f"appender.requests.fileName = {requests_file}\n"
            "appender.requests.layout.type = PatternLayout\n"
            "appender.requests.layout.pattern = %d{UNIX_MILLIS} %m%n\n"
            "appender.requests.filter.writers.type = RegexFilter\n"
            f"appender.requests.filter.writers.regex = {KMEDIC_WRITERS}\n"
            "appender.requests.filter.writers.onMatch = ACCEPT\n"
            "appender.requests.filter.writers.onMismatch = DENY\n",
        )
    return _base_log4j2(log_file)


def _base_log4j2(log_file: str) -> str:
    return (
        "status = warn\n"
        "appender.file.type = File\n"
        "appender.file.name = FILE\n"
        f"appender.file.fileName = {log_file}\n"
        "appender.file.layout.type = PatternLayout\n"
        "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
        "rootLogger.level = INFO\n"
        "rootLogger.appenderRef.file.ref = FILE\n"
        "logger.request.name = kafka.request.logger\n"
        "logger.request.level = WARN\n"
        "logger.state.name = state.change.logger\n"
        "logger.state.level = WARN\n"
    )


def logback_xml(log_file: str) -> str:
    """ZooKeeper's logback config: one file, INFO."""
    return (
        "<configuration>\n"
        '  <appender name="FILE" class="ch.qos.logback.core.FileAppender">\n'
        f"    <file>{log_file}</file>\n"
        "    <encoder><pattern>%d %-5level [%thread] %logger{36} - %msg%n</pattern></encoder>\n"
        "  </appender>\n"
        '  <root level="INFO"><appender-ref ref="FILE"/></root>\n'
        "</configuration>\n"
    )
