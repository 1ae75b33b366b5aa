"""The agent's configuration (YAML, overridable by KMEDIC_AGENT__<FIELD> environment variables)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kmedic.config import load_config
from kmedic.kafka_client import Cluster, KafkaClientSettings, one_cluster

ENV_PREFIX = "KMEDIC_AGENT"


class TopicSettings(BaseModel):
    """How the agent creates the stats topic when it is missing."""

    model_config = ConfigDict(extra="forbid")

    partitions: int = Field(default=6, ge=1)
    replication_factor: int = Field(
        default=3, ge=1, description="capped at the number of live brokers"
    )
    retention_ms: int = Field(default=3 * 24 * 3600 * 1000, ge=60_000)


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    broker_id: int = Field(ge=0, description="node.id of the broker this agent watches")
    bootstrap: str | None = Field(
        default=None, min_length=1, description="shorthand for kafka.bootstrap (plaintext)"
    )
    kafka: KafkaClientSettings | None = Field(
        default=None, description="how to reach the cluster (docs/security.md)"
    )
    exporter_url: str = Field(
        pattern=r"^https?://[^/\s]+",
        description="the broker's JMX exporter /metrics URL (http:// or https://)",
    )
    cluster: str = Field(default="default", min_length=1, description="cluster name in records")
    interval_s: float = Field(default=60.0, ge=0.5, description="sampling interval, seconds")
    busy_interval_s: float = Field(
        default=5.0,
        ge=0.5,
        description="sampling interval while the broker takes part in a reassignment (the "
        "adaptive throttle reacts to its traffic); never longer than interval_s",
    )
    heartbeat_interval_s: float | None = Field(
        default=5.0,
        ge=0.5,
        description="between samples, a heartbeat at most this far apart (after a look at the "
        "broker's listener): the agent's silence is then evidence within seconds "
        "(docs/brokerstats.md, 'Heartbeats'); null: none, the samples alone",
    )
    topic: str = Field(default="kmedic.brokerstats", min_length=1)
    publish_bootstrap: str | None = Field(
        default=None, description="where to publish records; default: the watched cluster"
    )
    publish_kafka: KafkaClientSettings | None = Field(
        default=None, description="publish_bootstrap with security settings"
    )
    broker_address: str | None = Field(
        default=None,
        pattern=r"^\[?[^\s\]]+\]?:\d{1,5}$",
        description="host:port of the broker's listener for the liveness check; "
        "default: from cluster metadata",
    )
    log_dirs: list[str] = Field(
        default_factory=list,
        description="the broker's log.dirs for statvfs; default: as the broker reports them",
    )
    kafka_version: str | None = Field(default=None, description="override the probed version")
    nic_mbps: float | None = Field(
        default=None,
        gt=0,
        description="the broker host's network capacity, Mbit/s each way, reported instead of "
        "the kernel's link speed: for a link shaped or capped below its speed (a cloud "
        "instance's bandwidth, a shaped test cluster) or one without a speed (loopback)",
    )
    log_dir_gb: float | None = Field(
        default=None,
        gt=0,
        description="each log directory's capacity, GB (10^9 bytes), reported instead of its "
        "file system's size, for brokers that share one file system (several on one disk, a "
        "test cluster): the directory's used bytes are then the broker's own replicas, and "
        "its free bytes never more than the file system's",
    )
    host: str | None = Field(default=None, description="host name in records if not registered")
    request_timeout_s: float = Field(default=10.0, gt=0)
    max_backoff_s: float = Field(
        default=300.0, gt=0, description="longest pause between Admin API reconnect attempts"
    )
    metadata_check_s: float = Field(
        default=600.0,
        ge=0,
        description="seconds between reads of the whole cluster's metadata, which cross-check "
        "the roles the broker's own gauges give and say which followers are in their ISR; "
        "0: every sample",
    )
    max_record_bytes: int = Field(default=900_000, ge=10_000)
    compression: str = Field(default="zstd", pattern="^(zstd|lz4|gzip|snappy|none)$")
    metrics_port: int | None = Field(
        default=9464, ge=0, le=65535, description="port of the agent's /metrics; null: off"
    )
    metrics_host: str = "0.0.0.0"
    web_config_file: Path | None = Field(
        default=None,
        description="Prometheus web-config file (tls_server_config, basic_auth_users) "
        "protecting the HTTP endpoints; docs/security.md",
    )
    max_queued_records: int = Field(
        default=1000, ge=1, description="records held while the stats topic is unavailable"
    )
    create_topic: bool = True
    topic_settings: TopicSettings = Field(default_factory=TopicSettings)

    @model_validator(mode="after")
    def _one_way_to_each_cluster(self) -> AgentConfig:
        one_cluster(self.bootstrap, self.kafka, "")
        if self.publish_bootstrap is not None and self.publish_kafka is not None:
            raise ValueError("give at most one of publish_bootstrap and publish_kafka")
        return self

    @property
    def cluster_client(self) -> Cluster:
        """The watched cluster."""
        return one_cluster(self.bootstrap, self.kafka, "")

    @property
    def publish_client(self) -> Cluster:
        """Where records go: the publish cluster, or the watched one."""
        if self.publish_kafka is not None:
            return self.publish_kafka
        return self.publish_bootstrap or self.cluster_client


def load_agent_config(path: str | Path | None) -> AgentConfig:
    return load_config(AgentConfig, path, env_prefix=ENV_PREFIX)
