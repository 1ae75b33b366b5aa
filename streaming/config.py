"""Configuration of the streaming job (`kmedic stream --config FILE`).

YAML through :func:`kmedic.config.load_config` with the env prefix ``KMEDIC_STREAM``, e.g.
``KMEDIC_STREAM__WINDOW=30s``. Durations are written like ``30s``, ``10m``, ``48h``, ``2d``.
The defaults are the production ones (a 48 h window, max of per-interval rates); the example
config and the tests use short windows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kmedic.config import load_config
from kmedic.kafka_client import Cluster, KafkaClientSettings
from streaming.supervise import RestartPolicy

ENV_PREFIX = "KMEDIC_STREAM"

_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_STATISTIC = re.compile(r"^(max|p(\d{1,2}(?:\.\d+)?))$")


def duration_seconds(text: str) -> float:
    """``"30s"`` -> 30.0; raises ValueError naming the accepted forms."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration like 500ms, 30s, 10m, 48h or 2d")
    return int(match.group(1)) * _UNIT_S[match.group(2)]


def spark_interval(text: str) -> str:
    """A duration as Spark interval text (whole milliseconds), e.g. ``"30000 milliseconds"``."""
    return f"{round(duration_seconds(text) * 1000)} milliseconds"


def _check_duration(value: str) -> str:
    if duration_seconds(value) <= 0:
        raise ValueError(f"{value!r} must be longer than zero")
    return value


class TopicsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    brokerstats: str = "kmedic.brokerstats"
    replica_loads: str = "kmedic.replica-loads"
    broker_loads: str = "kmedic.broker-loads"
    dlq: str = "kmedic.brokerstats.dlq"
    # Used only when the job creates a missing output topic.
    partitions: int = Field(default=6, ge=1)
    replication_factor: int = Field(default=3, ge=1)
    dlq_retention_ms: int = Field(default=7 * 24 * 3600 * 1000, ge=60_000)


class ValidationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    supported_schema_versions: list[int] = Field(default_factory=lambda: [1, 2], min_length=1)
    # A record stamped later than now + this is refused (a broker clock gone wrong).
    max_future_skew: str = "5m"
    # Off by default. Set (at most the watermark), a record stamped earlier than its Kafka
    # append time by more than this goes to the DLQ as late_record, where the windowed
    # aggregation could drop it without a word; but a backfill replayed in event-time order,
    # which the watermark would accept, is flagged too (docs/streaming.md).
    max_lateness: str | None = None
    # Per array (leaders, followers, reassigning, log_dirs): more entries than this is refused.
    max_array_entries: int = Field(default=50_000, ge=1)

    @field_validator("max_future_skew")
    @classmethod
    def _check_durations(cls, value: str) -> str:
        return _check_duration(value)

    @field_validator("max_lateness")
    @classmethod
    def _check_lateness(cls, value: str | None) -> str | None:
        return None if value is None else _check_duration(value)


class RestartConfig(BaseModel):
    """What the job does when a query fails (streaming.supervise): start again from the
    checkpoint after a backoff that doubles from ``initial_backoff`` up to ``max_backoff``."""

    model_config = ConfigDict(extra="forbid")

    initial_backoff: str = "5s"
    max_backoff: str = "2m"
    # Failures in a row before `kmedic stream` exits with an error; null: never give up (the
    # manager's stale-loads alert tells on-call that no loads arrive). A run that lasted
    # longer than max_backoff resets the count.
    max_failures: int | None = Field(default=None, ge=1)

    @field_validator("initial_backoff", "max_backoff")
    @classmethod
    def _check_durations(cls, value: str) -> str:
        return _check_duration(value)

    @model_validator(mode="after")
    def _check_order(self) -> RestartConfig:
        if duration_seconds(self.initial_backoff) > duration_seconds(self.max_backoff):
            raise ValueError(
                f"initial_backoff {self.initial_backoff} is longer than "
                f"max_backoff {self.max_backoff}"
            )
        return self

    def policy(self) -> RestartPolicy:
        cap = duration_seconds(self.max_backoff)
        return RestartPolicy(
            initial_backoff_s=duration_seconds(self.initial_backoff),
            max_backoff_s=cap,
            max_failures=self.max_failures,
            healthy_after_s=cap,
        )


class SparkConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # None under spark-submit: the master then comes from the command line.
    master: str | None = "local[*]"
    app_name: str = "kmedic-stream"
    driver_memory: str = "2g"
    shuffle_partitions: int = Field(default=4, ge=1)
    # Where Spark keeps its scratch files (spark.local.dir; with an embedded driver also its
    # JVM's java.io.tmpdir), created if missing. None: Spark's default, /tmp, where a job
    # stopped by SIGKILL (or the OOM killer) leaves them for good.
    local_dir: str | None = None
    # Extra JVM options for a driver kmedic starts itself (master set), after its own. A job
    # that lives briefly on a few shared cores (the demo, the tests, the soak) runs lighter on
    # C1 alone and the serial collector: ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"].
    driver_java_options: list[str] = Field(default_factory=list)
    # Extra Spark settings passed through unchanged (spark.* keys).
    conf: dict[str, str] = Field(default_factory=dict)


class StreamConfig(BaseModel):
    """Everything `kmedic stream` needs; see configs/stream.example.yaml."""

    model_config = ConfigDict(extra="forbid")

    # The cluster's name in the job's metric labels (the agents' and the manager's name).
    cluster: str = Field(default="default", min_length=1)
    # Shorthand for kafka.bootstrap (plaintext); give one or the other. The key every role's
    # config uses; ``bootstrap_servers``, its former name here, is still read.
    bootstrap: str = "127.0.0.1:9092"
    # How to reach the cluster, security included (docs/security.md).
    kafka: KafkaClientSettings | None = None
    # Tuning on top, passed to Spark's Kafka source and sink as kafka.<key>: Java client
    # settings (timeouts and the like; not how to connect, which is kafka:).
    kafka_options: dict[str, str] = Field(default_factory=dict)
    # The same for the admin client that creates missing output topics, which is librdkafka
    # (confluent-kafka): its names differ.
    admin_options: dict[str, str] = Field(default_factory=dict)
    topics: TopicsConfig = Field(default_factory=TopicsConfig)
    window: str = "48h"
    slide: str = "1h"
    watermark: str = "10m"
    statistic: str = "max"
    trigger_interval: str = "1m"
    # Process what is in the topic now, then stop (tests, benchmarks, back-fills).
    available_now: bool = False
    checkpoint_location: Path = Path("var/stream/checkpoint")
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    # Records per micro-batch (configs/stream.production.yaml says how it was chosen).
    max_offsets_per_trigger: int | None = Field(default=1000, ge=1)
    create_topics: bool = True
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    restart: RestartConfig = Field(default_factory=RestartConfig)
    # The job's own /metrics (streaming/metrics.py); null: off.
    metrics_port: int | None = Field(default=9465, ge=0, le=65535)
    metrics_host: str = "0.0.0.0"
    web_config_file: Path | None = Field(
        default=None,
        description="Prometheus web-config file (tls_server_config, basic_auth_users) "
        "protecting the HTTP endpoints; docs/security.md",
    )
    spark: SparkConfig = Field(default_factory=SparkConfig)

    @field_validator("window", "slide", "watermark", "trigger_interval")
    @classmethod
    def _check_durations(cls, value: str) -> str:
        return _check_duration(value)

    @field_validator("statistic")
    @classmethod
    def _check_statistic(cls, value: str) -> str:
        match = _STATISTIC.match(value)
        if not match or (match.group(2) is not None and not 0 < float(match.group(2)) < 100):
            raise ValueError(f"{value!r} is not a statistic: use max or pNN (0 < NN < 100)")
        return value

    @property
    def cluster_client(self) -> Cluster:
        return self.kafka if self.kafka is not None else self.bootstrap

    @model_validator(mode="before")
    @classmethod
    def _former_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and "bootstrap_servers" in data:
            if "bootstrap" in data:
                raise ValueError(
                    "give bootstrap only (bootstrap_servers is its former name), not both"
                )
            data = {("bootstrap" if k == "bootstrap_servers" else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _one_way_to_the_cluster(self) -> StreamConfig:
        if self.kafka is not None and "bootstrap" in self.model_fields_set:
            raise ValueError("give exactly one of bootstrap and kafka")
        return self

    @model_validator(mode="after")
    def _check_window(self) -> StreamConfig:
        window = duration_seconds(self.window)
        slide = duration_seconds(self.slide)
        if slide > window:
            raise ValueError(f"slide {self.slide} is longer than window {self.window}")
        if round(window * 1000) % round(slide * 1000) != 0:
            raise ValueError(
                f"window {self.window} is not a whole number of slides {self.slide}: "
                "a window is made of slide-long buckets"
            )
        if window / slide > 1000:
            raise ValueError(
                f"window {self.window} / slide {self.slide} is more than 1000 windows per record"
            )
        lateness = self.validation.max_lateness
        if lateness is not None and duration_seconds(lateness) > duration_seconds(self.watermark):
            raise ValueError(
                f"validation.max_lateness {lateness} is longer than the watermark "
                f"{self.watermark}: records between the two would be dropped silently"
            )
        return self

    @property
    def percentile(self) -> float | None:
        """None for max, else the fraction (p95 -> 0.95)."""
        return None if self.statistic == "max" else float(self.statistic[1:]) / 100


def load_stream_config(path: str | Path | None) -> StreamConfig:
    return load_config(StreamConfig, path, env_prefix=ENV_PREFIX)
