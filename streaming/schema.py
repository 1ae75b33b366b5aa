"""The explicit Spark schema of a BrokerStats record (kmedic/brokerstats.py, version 1).

Spark never infers the shape of records on the stream: a record is parsed against this schema
and then checked field by field (streaming.validate). A unit test compares these fields with the
pydantic model, so the two cannot drift apart silently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

# Fields that may be null in a valid record; every other field is required.
NULLABLE_TOP_LEVEL = frozenset(
    {"rack", "rate_window_s", "kafka_version", "failure", "nic", "latency", "process"}
)
NULLABLE_LOG_DIR = frozenset({"total_bytes", "free_bytes", "replica_bytes", "error", "cordoned"})

# Array fields of the record; each is bounded by ValidationConfig.max_array_entries.
ARRAY_FIELDS = ("leaders", "followers", "reassigning", "log_dirs")

RATE_FIELDS = ("bytes_in_per_s", "bytes_out_per_s", "messages_in_per_s")


def brokerstats_schema() -> StructType:
    """StructType of BrokerStats v1, field for field."""
    from pyspark.sql.types import (
        ArrayType,
        BooleanType,
        DoubleType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    def struct(*fields: tuple[str, object]) -> StructType:
        return StructType([StructField(name, kind, True) for name, kind in fields])  # type: ignore[arg-type]

    failure = struct(("reason", StringType()), ("message", StringType()))
    leader = struct(
        ("topic", StringType()),
        ("partition", IntegerType()),
        ("bytes_in_per_s", DoubleType()),
        ("bytes_out_per_s", DoubleType()),
        ("messages_in_per_s", DoubleType()),
        ("log_size_bytes", LongType()),
        ("log_start_offset", LongType()),
        ("log_end_offset", LongType()),
        ("estimate", StringType()),
    )
    follower = struct(
        ("topic", StringType()),
        ("partition", IntegerType()),
        ("leader_id", IntegerType()),
        ("log_size_bytes", LongType()),
        ("log_end_offset", LongType()),
        ("in_isr", BooleanType()),
    )
    reassigning = struct(
        ("topic", StringType()),
        ("partition", IntegerType()),
        ("replicas", ArrayType(IntegerType())),
        ("adding_replicas", ArrayType(IntegerType())),
        ("removing_replicas", ArrayType(IntegerType())),
    )
    log_dir = struct(
        ("path", StringType()),
        ("total_bytes", LongType()),
        ("free_bytes", LongType()),
        ("replica_bytes", LongType()),
        ("error", StringType()),
        ("cordoned", BooleanType()),
    )
    nic = struct(
        ("interface", StringType()),
        ("speed_bytes_per_s", LongType()),
        ("note", StringType()),
    )
    latency = struct(
        ("probe_count", IntegerType()),
        ("probe_failures", IntegerType()),
        ("probe_p50_ms", DoubleType()),
        ("probe_p90_ms", DoubleType()),
        ("probe_max_ms", DoubleType()),
        ("produce_local_ms", DoubleType()),
        ("log_flush_ms", DoubleType()),
    )
    process = struct(
        ("state", StringType()),
        ("broker_state", IntegerType()),
        ("logs_to_recover", LongType()),
        ("segments_to_recover", LongType()),
        ("listening", BooleanType()),
        ("down_since_ms", LongType()),
        ("restarts", IntegerType()),
        ("restart_window_s", DoubleType()),
        ("progress_ms", LongType()),
    )
    totals = struct(
        ("bytes_in_per_s", DoubleType()),
        ("bytes_out_per_s", DoubleType()),
        ("messages_in_per_s", DoubleType()),
        ("leader_count", IntegerType()),
        ("follower_count", IntegerType()),
        ("reassigning_count", IntegerType()),
        ("under_replicated_count", IntegerType()),
        ("log_size_bytes", LongType()),
    )
    return struct(
        # Parsed as a string so an unknown version (or a non-number) is told apart from a
        # schema break: the version is checked before anything else.
        ("schema_version", StringType()),
        ("sample_id", StringType()),
        ("chunk_index", IntegerType()),
        ("chunk_count", IntegerType()),
        ("cluster", StringType()),
        ("broker_id", IntegerType()),
        ("host", StringType()),
        ("rack", StringType()),
        ("timestamp_ms", LongType()),
        ("interval_s", DoubleType()),
        ("rate_window_s", DoubleType()),
        ("agent_version", StringType()),
        ("kafka_version", StringType()),
        ("failure", failure),
        ("scope", StringType()),
        ("leaders", ArrayType(leader)),
        ("followers", ArrayType(follower)),
        ("reassigning", ArrayType(reassigning)),
        ("log_dirs", ArrayType(log_dir)),
        ("totals", totals),
        ("nic", nic),
        ("latency", latency),
        ("process", process),
    )
