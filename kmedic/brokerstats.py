"""The BrokerStats record: what one broker carries, sampled by its agent, JSON on the wire.

One record (or several chunks of one sample, see ``chunk_index``) per broker per interval is
published to ``kmedic.brokerstats`` keyed by broker id. Downstream readers parse it with an
explicit schema, so every field is a plain JSON type: ints, floats, strings, bools, lists of ints,
and lists of flat objects. The committed JSON Schema (configs/brokerstats.schema.json) is
generated from these models by :func:`json_schema`; docs/brokerstats.md describes every field.

Changing a field's name, type or meaning requires a new ``schema_version``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kmedic.errors import KmedicError

SCHEMA_VERSION: Literal[1] = 1
"""The version of a whole record (every replica of the broker); readers reject records with a
version they do not know."""
MOVING_SCHEMA_VERSION: Literal[2] = 2
"""The version of a record that lists only the partitions with a reassignment in progress
(``scope`` "moving"): a reader that does not know it skips the record, instead of taking the
broker for one that lost its other replicas."""

Scope = Literal["all", "moving"]

FailureReason = Literal[
    "broker_unreachable",
    "exporter_unreachable",
    "exporter_parse_error",
    "disk_error",
    "admin_api_error",
]
"""Why a sample is incomplete. See docs/brokerstats.md for when each is set."""

FAILURE_REASONS: tuple[FailureReason, ...] = (
    "broker_unreachable",
    "exporter_unreachable",
    "exporter_parse_error",
    "disk_error",
    "admin_api_error",
)

RateEstimate = Literal["size_delta", "offset_share", "even_split", "no_baseline"]
"""How a leader replica's rates were estimated (see docs/brokerstats.md, "Traffic estimate")."""

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "configs" / "brokerstats.schema.json"


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Failure(_Record):
    """Why this sample could not be taken completely."""

    reason: FailureReason = Field(description="Failure reason code.")
    message: str = Field(description="Human-readable detail (the underlying error).")


class LeaderReplica(_Record):
    """A partition this broker leads, with its estimated traffic over the rate window."""

    topic: str = Field(description="Topic name.")
    partition: int = Field(ge=0, description="Partition number.")
    bytes_in_per_s: float = Field(
        ge=0, description="Estimated bytes produced to this partition per second (bytes/s)."
    )
    bytes_out_per_s: float = Field(
        ge=0,
        description="Estimated bytes fetched from this replica per second by consumers and "
        "followers (bytes/s).",
    )
    messages_in_per_s: float = Field(
        ge=0, description="Messages appended per second, from log-end-offset deltas (messages/s)."
    )
    log_size_bytes: int = Field(ge=0, description="Size of the partition's log on disk (bytes).")
    log_start_offset: int = Field(ge=0, description="First offset in the log (offset).")
    log_end_offset: int = Field(ge=0, description="Offset of the next message appended (offset).")
    estimate: RateEstimate = Field(description="How the rates of this replica were estimated.")


class FollowerReplica(_Record):
    """A partition this broker holds as a follower."""

    topic: str = Field(description="Topic name.")
    partition: int = Field(ge=0, description="Partition number.")
    leader_id: int = Field(
        description="Broker id of the leader this replica copies from (else the leader at "
        "the agent's last metadata read); -1 when neither names one."
    )
    log_size_bytes: int = Field(ge=0, description="Size of this replica's log on disk (bytes).")
    log_end_offset: int = Field(ge=0, description="This replica's log end offset (offset).")
    in_isr: bool = Field(
        description="True when this broker was in the partition's ISR at the agent's last "
        "metadata read (at most metadata_check_s old)."
    )


class ReassigningReplica(_Record):
    """A partition hosted on this broker that has a reassignment in progress."""

    topic: str = Field(description="Topic name.")
    partition: int = Field(ge=0, description="Partition number.")
    replicas: list[int] = Field(description="Broker ids of the full replica set during the move.")
    adding_replicas: list[int] = Field(description="Broker ids being added.")
    removing_replicas: list[int] = Field(description="Broker ids being removed.")


class LogDir(_Record):
    """One of the broker's log directories (``log.dirs``)."""

    path: str = Field(description="Absolute path of the log directory on the broker host.")
    total_bytes: int | None = Field(
        ge=0, description="Capacity of the file system holding it (bytes); null when unknown."
    )
    free_bytes: int | None = Field(
        ge=0,
        description="Space usable by the broker on that file system (bytes); null when unknown.",
    )
    replica_bytes: int | None = Field(
        ge=0,
        description="Sum of replica log sizes in this directory (bytes); null when unknown.",
    )
    error: str | None = Field(description="Error reported for this directory; null when healthy.")
    cordoned: bool | None = Field(
        default=None,
        description="Whether Kafka places no new partition in it (KIP-1066: cordoned.log.dirs, "
        "Kafka 4.3+); false from older brokers; null when unknown (statvfs only, or an agent "
        "older than this field).",
    )


class Nic(_Record):
    """The network interface the broker is reached on, as its host reports it."""

    interface: str | None = Field(description="Its name (e.g. eth0); null when not found.")
    speed_bytes_per_s: int | None = Field(
        ge=0, description="Its link speed (bytes/s, each direction); null when it cannot be read."
    )
    note: str | None = Field(
        description="Why the speed could not be read, or that the agent's config set it; "
        "null when the kernel's figure was read."
    )


class Latency(_Record):
    """How long the broker takes to answer, as its agent measures it between two samples
    (the evidence behind the manager's slow-broker score, docs/manager.md)."""

    probe_count: int = Field(
        ge=0, description="Probes of the broker (ApiVersions round trips) since the last sample."
    )
    probe_failures: int = Field(
        ge=0, description="Of those, probes that failed or got no answer within their timeout."
    )
    probe_p50_ms: float | None = Field(
        ge=0,
        description="Median round trip (ms; a failed probe counts as its timeout); null when "
        "there was no probe.",
    )
    probe_p90_ms: float | None = Field(
        ge=0, description="90th percentile round trip (ms, as above); null when no probe."
    )
    probe_max_ms: float | None = Field(
        ge=0, description="Longest round trip (ms, as above); null when no probe."
    )
    produce_local_ms: float | None = Field(
        ge=0,
        description="Mean time the broker itself spent on a Produce request since the last "
        "sample (ms; the exporter's RequestMetrics LocalTimeMs, without the wait for "
        "followers); null when none was served or it is not exported.",
    )
    log_flush_ms: float | None = Field(
        ge=0,
        description="Mean time of a log flush since the last sample (ms, LogFlushStats); null "
        "when none happened or it is not exported.",
    )


ProcessState = Literal[
    "running", "starting", "recovering", "shutting_down", "not_running", "unknown"
]


class Process(_Record):
    """The broker's process as its agent sees it on the broker's host: Kafka's own
    ``BrokerState`` (through the exporter in the broker's JVM), its log recovery's progress
    (KIP-831), whether its listener accepts connections, and how often it came back lately."""

    state: ProcessState = Field(
        description="running, starting, recovering (log recovery), shutting_down (controlled "
        "shutdown), not_running (neither its listener nor its exporter answers: exited, or its "
        "host is unreachable), unknown (the agent cannot tell)."
    )
    broker_state: int | None = Field(
        description="Kafka's BrokerState as the broker reports it (0 not running, 1 starting, "
        "2 recovery, 3 running, 6 pending controlled shutdown, 7 shutting down); null when its "
        "exporter did not answer."
    )
    logs_to_recover: int | None = Field(
        ge=0,
        description="Logs still to recover, summed over its log directories "
        "(LogManager remainingLogsToRecover); null when not exported (no recovery under way).",
    )
    segments_to_recover: int | None = Field(
        ge=0,
        description="Segments still to recover, summed (LogManager remainingSegmentsToRecover); "
        "null when not exported.",
    )
    listening: bool | None = Field(
        description="Whether the broker's listener accepted a connection this sample; null when "
        "its address is not known yet."
    )
    down_since_ms: int | None = Field(
        description="When this agent first saw it not running in the current spell (Unix ms); "
        "null while it runs, starts or recovers."
    )
    restarts: int = Field(
        ge=0,
        description="Times this agent saw it come back (not running, then starting, recovering "
        "or running) in the last restart_window_s.",
    )
    restart_window_s: float = Field(gt=0, description="The window ``restarts`` counts in (s).")
    progress_ms: int | None = Field(
        default=None,
        ge=0,
        description="When this agent last saw the broker's start move forward (Unix ms): its "
        "state advanced, or fewer logs or segments were left to recover; null while it runs or "
        "is not running, and from agents before this field.",
    )


class Totals(_Record):
    """Broker-wide figures (for the whole sample, identical in every chunk)."""

    bytes_in_per_s: float = Field(
        ge=0, description="Bytes produced to this broker per second (bytes/s)."
    )
    bytes_out_per_s: float = Field(
        ge=0, description="Bytes fetched from this broker per second (bytes/s)."
    )
    messages_in_per_s: float = Field(ge=0, description="Messages produced per second (messages/s).")
    leader_count: int = Field(ge=0, description="Number of partitions this broker leads.")
    follower_count: int = Field(ge=0, description="Number of partitions this broker follows.")
    reassigning_count: int = Field(
        ge=0, description="Number of hosted partitions with a reassignment in progress."
    )
    under_replicated_count: int = Field(
        ge=0, description="Led partitions whose ISR is smaller than their replica set."
    )
    log_size_bytes: int = Field(
        ge=0, description="Sum of log sizes of every replica on this broker (bytes)."
    )


class BrokerStats(_Record):
    """One sample (or one chunk of a sample) of one broker."""

    schema_version: Literal[1, 2] = Field(
        description="Record format version: 1 for a record of scope all, 2 for scope moving."
    )
    sample_id: str = Field(
        min_length=1, description="Identifier shared by every chunk of one sample."
    )
    chunk_index: int = Field(ge=0, description="Index of this chunk within the sample (0-based).")
    chunk_count: int = Field(ge=1, description="Number of chunks the sample was split into.")
    cluster: str = Field(min_length=1, description="Cluster name from the agent configuration.")
    broker_id: int = Field(ge=0, description="Broker id (node.id) of the sampled broker.")
    host: str = Field(description="Host name of the broker (from the Admin API, else the agent's).")
    rack: str | None = Field(description="The broker's broker.rack; null when unset or unknown.")
    timestamp_ms: int = Field(ge=0, description="When the sample was taken (Unix epoch, ms).")
    interval_s: float = Field(gt=0, description="Configured sampling interval (seconds).")
    rate_window_s: float | None = Field(
        ge=0,
        description="Seconds between the two exporter scrapes the rates were computed from; "
        "null when there is no previous scrape (first sample, or after a failure).",
    )
    agent_version: str = Field(description="Version of the agent that wrote the record.")
    kafka_version: str | None = Field(description="Kafka version of the broker; null when unknown.")
    failure: Failure | None = Field(
        description="Set when the sample is incomplete; null for a complete sample."
    )
    scope: Scope = Field(
        default="all",
        description="all: every replica of the broker is listed (in this sample's chunks). "
        "moving: only the partitions with a reassignment in progress - a record the agent "
        "sends at its busy interval between whole ones (every interval_s), so that what kmedic "
        "reacts to while it moves replicas (totals, nic, latency, the moving partitions) is "
        "fresh without every replica's entry at that rate; the other replicas are as in the "
        "broker's last whole record.",
    )
    leaders: list[LeaderReplica] = Field(description="Partitions led by this broker (this chunk).")
    followers: list[FollowerReplica] = Field(
        description="Partitions followed by this broker (this chunk)."
    )
    reassigning: list[ReassigningReplica] = Field(
        description="Hosted partitions with a reassignment in progress (this chunk)."
    )
    log_dirs: list[LogDir] = Field(description="The broker's log directories (every chunk).")
    totals: Totals = Field(description="Broker-wide totals (every chunk).")
    nic: Nic | None = Field(
        default=None,
        description="The broker's network interface and its link speed (every chunk); null "
        "from agents before this field.",
    )
    latency: Latency | None = Field(
        default=None,
        description="How long the broker took to answer since the previous sample (every "
        "chunk); null from agents before this field.",
    )
    process: Process | None = Field(
        default=None,
        description="The broker's process as its agent sees it (every chunk); null from agents "
        "before this field.",
    )

    @model_validator(mode="after")
    def _version_names_scope(self) -> BrokerStats:
        wanted = MOVING_SCHEMA_VERSION if self.scope == "moving" else SCHEMA_VERSION
        if self.schema_version != wanted:
            raise ValueError(
                f"a record of scope {self.scope} has schema_version {wanted}, "
                f"not {self.schema_version}"
            )
        return self


def moving_only(stats: BrokerStats) -> BrokerStats:
    """``stats`` with only the partitions that have a reassignment in progress (scope moving)."""
    moving = {(r.topic, r.partition) for r in stats.reassigning}
    return stats.model_copy(
        update={
            "schema_version": MOVING_SCHEMA_VERSION,
            "scope": "moving",
            "leaders": [r for r in stats.leaders if (r.topic, r.partition) in moving],
            "followers": [r for r in stats.followers if (r.topic, r.partition) in moving],
        }
    )


def json_schema() -> dict[str, Any]:
    """The JSON Schema of a BrokerStats record, as committed in configs/."""
    schema = BrokerStats.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "kmedic.brokerstats.v1"
    return schema


def render_json_schema() -> str:
    """The committed file's exact text."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"


def write_json_schema(path: Path = SCHEMA_PATH) -> Path:
    """Regenerate configs/brokerstats.schema.json from the models."""
    path.write_text(render_json_schema())
    return path


HEARTBEAT_PREFIX = b'{"heartbeat":'
"""How a heartbeat's JSON begins (its first field): readers tell it from a sample by it, the
stream job without parsing it."""


class Heartbeat(_Record):
    """The agent is alive and its next record comes within ``next_within_s``: published
    between samples, so that an agent's silence is evidence within seconds, not a minute (the
    manager's wait-or-heal decision: docs/brokerstats.md, "Heartbeats"). Keyed as the agent's
    samples are; never a sample: it carries no figure but whether the broker's listener
    accepted a connection."""

    heartbeat: Literal[1] = Field(description="The heartbeat format's version (always first).")
    cluster: str = Field(min_length=1, description="Cluster name from the agent configuration.")
    broker_id: int = Field(ge=0, description="Broker id of the agent's broker.")
    timestamp_ms: int = Field(ge=0, description="When the agent published it (Unix ms).")
    next_within_s: float = Field(
        gt=0, description="The longest gap to the agent's next record, sample or heartbeat (s)."
    )
    listening: bool | None = Field(
        description="Whether the broker's listener accepted a connection just before; null "
        "when its address is not known yet."
    )


def to_json(stats: BrokerStats | Heartbeat) -> bytes:
    """Wire encoding: compact UTF-8 JSON."""
    return stats.model_dump_json().encode()


def is_heartbeat(data: bytes) -> bool:
    return data.startswith(HEARTBEAT_PREFIX)


def heartbeat_from_json(data: bytes) -> Heartbeat:
    """Parse one heartbeat; a bad one raises KmedicError naming the offending fields."""
    return _parsed(Heartbeat, data, "heartbeat")


def from_json(data: bytes | str) -> BrokerStats:
    """Parse one record; a bad record raises KmedicError naming the offending fields."""
    return _parsed(BrokerStats, data, "BrokerStats")


_R = TypeVar("_R", bound="_Record")


def _parsed(model: type[_R], data: bytes | str, what: str) -> _R:
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
            for e in exc.errors()[:5]
        )
        raise KmedicError(f"invalid {what} record: {problems}") from exc


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f}"


def summarize(stats: BrokerStats) -> str:
    """One line for a terminal: broker, rack, roles, MB/s in/out, disk, or the failure."""
    head = f"broker {stats.broker_id} rack {stats.rack or '-'}"
    if stats.chunk_count > 1:
        head += f" [chunk {stats.chunk_index + 1}/{stats.chunk_count}]"
    if stats.failure is not None:
        return f"{head}: FAILED {stats.failure.reason}: {stats.failure.message}"
    t = stats.totals
    known = [d for d in stats.log_dirs if d.total_bytes is not None and d.free_bytes is not None]
    if known:
        total = sum(d.total_bytes or 0 for d in known)
        free = sum(d.free_bytes or 0 for d in known)
        used_pct = 100.0 * (total - free) / total if total else 0.0
        disk = f"disk {used_pct:.0f}% used, {free / 1e9:.1f} GB free"
    else:
        disk = "disk unknown"
    rates = (
        f"in {_mb(t.bytes_in_per_s)} MB/s out {_mb(t.bytes_out_per_s)} MB/s"
        if stats.rate_window_s is not None
        else "rates warming up"
    )
    return (
        f"{head}: {t.leader_count} leaders {t.follower_count} followers"
        f" ({t.under_replicated_count} under-replicated, {t.reassigning_count} reassigning),"
        f" {rates}, logs {_mb(t.log_size_bytes)} MB, {disk}"
    )


if __name__ == "__main__":
    print(f"wrote {write_json_schema()}")
