"""The agent's configuration (YAML, overridable by KMEDIC_AGENT__<FIELD> environment variables)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from kmedic.config import load_config

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
    bootstrap: str = Field(min_length=1, description="bootstrap servers of the cluster")
    exporter_url: str = Field(
        pattern=r"^https?://[^/\s]+",
        description="the broker's JMX exporter /metrics URL (http:// or https://)",
    )
    cluster: str = Field(default="default", min_length=1, description="cluster name in records")
    interval_s: float = Field(default=60.0, ge=0.5, description="sampling interval, seconds")
    topic: str = Field(default="kmedic.brokerstats", min_length=1)
    publish_bootstrap: str | None = Field(
        default=None, description="where to publish records; default: the watched cluster"
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
    host: str | None = Field(default=None, description="host name in records if not registered")
    request_timeout_s: float = Field(default=10.0, gt=0)
    max_backoff_s: float = Field(
        default=300.0, gt=0, description="longest pause between Admin API reconnect attempts"
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


def load_agent_config(path: str | Path | None) -> AgentConfig:
    return load_config(AgentConfig, path, env_prefix=ENV_PREFIX)
