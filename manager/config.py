"""The manager's configuration: one YAML file, environment overrides KMEDIC_MANAGER__*.

Safety settings (the policy: grace period, dead-broker caps, budgets, limits) are the planner's
own model, so what the operator writes is exactly what the gates read.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kmedic.config import load_config
from kmedic.kafka_client import Cluster, KafkaClientSettings, one_cluster
from kmedic.own_topics import DEFAULT_DLQ, OwnTopics
from manager.analyzer.readiness import ASSUMED_MOVE_BYTES_PER_S
from manager.coordination.connection import CoordinationConfig
from manager.executor.config import ExecutorConfig
from manager.model.mode import Mode
from manager.model.policy import Policy
from manager.monitor.observe import CapacitySettings


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TopicNames(_Settings):
    brokerstats: str = "kmedic.brokerstats"
    replica_loads: str = "kmedic.replica-loads"
    broker_loads: str = "kmedic.broker-loads"
    actions: str = "kmedic.actions"

    def own(self) -> OwnTopics:
        """kmedic's own topics as these names give them (the dead-letter topic: its default
        name, which only the stream's config changes)."""
        loads = (self.replica_loads, self.broker_loads, DEFAULT_DLQ)
        return OwnTopics.named(self.brokerstats, self.actions, loads)


class AuditSettings(_Settings):
    secondary_bootstrap: str | None = Field(
        default=None,
        description="a second cluster that takes audit records while the primary cannot",
    )
    secondary_kafka: KafkaClientSettings | None = Field(
        default=None, description="secondary_bootstrap with security settings"
    )
    spool_dir: Path = Field(default=Path("var/kmedic/spool"), description="local fsync'd spool")
    write_timeout_s: float = Field(default=5.0, gt=0)
    retry_interval_s: float = Field(default=5.0, gt=0)
    failover_alert_after_s: float = Field(
        default=60.0,
        ge=0,
        description="how long the audit log may stay on its failover sink before the "
        "audit_on_failover alert: a broker death moves the audit topic's leadership (fencing "
        "and an election take seconds); that is counted, not paged",
    )


class HttpSettings(_Settings):
    host: str = "127.0.0.1"
    port: int = Field(default=9309, ge=0, le=65535, description="0: pick a free port")
    web_config_file: Path | None = Field(
        default=None,
        description="Prometheus web-config file (tls_server_config, basic_auth_users) "
        "protecting the HTTP endpoints; docs/security.md",
    )
    max_followers: int = Field(
        default=8,
        ge=1,
        le=64,
        description="audit follows (/api/v1/audit/follow) served at once, on threads of "
        "their own; one more is refused with 429",
    )


class ReadinessSettings(_Settings):
    """The failure-readiness sweep on the leader (docs/readiness.md)."""

    enabled: bool = True
    period_s: float = Field(default=600.0, gt=0, description="seconds between sweeps")
    first_sweep_s: float = Field(
        default=120.0,
        ge=0,
        description="no sweep sooner after the manager starts: a new leader's first cycles "
        "(a heal of a fresh failure) do not share the interpreter with it",
    )
    cpu_share: float = Field(
        default=0.25, gt=0, le=1, description="the share of the time a sweep may run"
    )
    assumed_move_bytes_per_s: float = Field(
        default=ASSUMED_MOVE_BYTES_PER_S,
        gt=0,
        description="the copy rate per move a heal-time estimate assumes until this manager "
        "has measured its own moves' rate",
    )


class ManagerConfig(_Settings):
    cluster: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    bootstrap: str | None = Field(
        default=None, min_length=1, description="shorthand for kafka.bootstrap (plaintext)"
    )
    kafka: KafkaClientSettings | None = Field(
        default=None, description="the Kafka cluster kmedic looks after (docs/security.md)"
    )
    own_topics_bootstrap: str | None = Field(
        default=None,
        min_length=1,
        description="the Kafka cluster holding kmedic's own topics (the agents' stats, the "
        "stream's loads, the audit log) when it is not the one looked after: an operations "
        "cluster, where the agents publish (their publish_bootstrap) and the stream reads; "
        "plaintext. Default: the cluster looked after",
    )
    own_topics_kafka: KafkaClientSettings | None = Field(
        default=None, description="own_topics_bootstrap with security settings"
    )
    zookeeper: CoordinationConfig
    instance_id: str | None = Field(default=None, description="default: host-pid")
    mode: Mode = Field(
        default="observe",
        description="observe (the default: a new install acts on nothing), or act. Observe "
        "decides, audits would_act with the full plan and alerts, but writes nothing to the "
        "cluster. `kmedic mode act|observe` switches every instance at run time (ZooKeeper), "
        "overriding this",
    )
    interval_s: float = Field(default=30.0, gt=0, description="seconds between cycles")
    stats_lookback_s: float = Field(
        default=3600.0, gt=0, description="how far back the stats topic is read at start"
    )
    feed_process: bool = Field(
        default=True,
        description="tail and decode the stats and loads topics in a child process of the "
        "manager (kmedic-feeds), which hands each cycle a copy: at fleet scale their decoding "
        "takes 0.4 s of CPU a second, and in the manager's own process it held the interpreter "
        "a cycle runs in (docs/bench.md). false: in threads of the manager's process",
    )
    blind_alert_after_s: float = Field(
        default=60.0,
        ge=0,
        description="a cycle that cannot read the cluster or ZooKeeper is a refusal, audited; "
        "its alert record is raised only once the manager has been blind this long (a broker "
        "dying under a read, ZooKeeper paused for seconds, is no page). A controller quorum "
        "without a leader is held to the same bound: an election after the active controller's "
        "death is refused each cycle, and pages only if it lasts",
    )
    lag_alert_after_s: float = Field(
        default=300.0,
        ge=0,
        description="under-replication nothing explains (a live follower out of the ISR: a "
        "network link, a slow disk) is refused each cycle, audited; its alert record is raised "
        "only once it has lasted this long (a link that drops for a minute and comes back is no "
        "page), as KmedicUnexplainedUnderReplication waits 5m",
    )
    refusal_alert_after_s: float = Field(
        default=120.0,
        ge=0,
        description="a refusal is audited each cycle; its alert record is raised only once "
        "the refusal has lasted this long (brokers restarting at once, the Spark job restarting, "
        "the audit log on its failover for seconds is no page), as KmedicRefusingToHeal waits "
        "2m. The quorum and unexplained under-replication have bounds of their own (above)",
    )
    snapshot_path: Path | None = Field(
        default=None, description="write each cycle's snapshot here (for `kmedic plan` replay)"
    )
    topics: TopicNames = TopicNames()
    policy: Policy = Policy()
    capacity: CapacitySettings = CapacitySettings()
    audit: AuditSettings = AuditSettings()
    executor: ExecutorConfig = ExecutorConfig()
    http: HttpSettings = HttpSettings()
    readiness: ReadinessSettings = ReadinessSettings()

    @model_validator(mode="after")
    def _one_way_to_each_cluster(self) -> ManagerConfig:
        one_cluster(self.bootstrap, self.kafka, "")
        if self.own_topics_bootstrap is not None and self.own_topics_kafka is not None:
            raise ValueError("give at most one of own_topics_bootstrap and own_topics_kafka")
        audit = self.audit
        if audit.secondary_bootstrap is not None and audit.secondary_kafka is not None:
            raise ValueError("give at most one of audit.secondary_bootstrap and secondary_kafka")
        return self

    @property
    def cluster_client(self) -> Cluster:
        return one_cluster(self.bootstrap, self.kafka, "")

    @property
    def own_topics_client(self) -> Cluster:
        """Where kmedic's own topics are: the stats and loads it reads, the audit log it
        writes (the own-topics cluster, else the one looked after)."""
        if self.own_topics_kafka is not None:
            return self.own_topics_kafka
        return self.own_topics_bootstrap or self.cluster_client

    @property
    def secondary_client(self) -> Cluster | None:
        return self.audit.secondary_kafka or self.audit.secondary_bootstrap


def load_manager_config(path: str | Path | None) -> ManagerConfig:
    return load_config(ManagerConfig, path, env_prefix="KMEDIC_MANAGER")
