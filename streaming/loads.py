"""From validated BrokerStats records to windowed loads (DataFrame transforms, no I/O).

1. :func:`ring_rows` turns each validated record into rows: a good record into one row per
   replica it reports (leaders and followers, minus partitions with a reassignment in progress)
   plus one row for the broker (from the first chunk of a sample only, since every chunk
   repeats the broker totals); a bad record into one DLQ row carrying its original bytes. One
   read of the source feeds both outputs.
2. :func:`bucket_loads` keeps, per key, a ring of its last window / slide buckets (a JVM
   stateful function, ``streaming/jvm``, one state row per key) and emits, for every key that
   reported in a micro-batch, the statistic (max or a percentile) of the per-interval rates
   over the window ending with the bucket of its latest report. DLQ rows pass through.
3. :func:`output_records` turns those into the JSON values of the compacted output topics
   (docs/streaming.md) and the DLQ records, for one Kafka write.

Rates that do not measure an interval (no previous scrape, or a failed sample) are null, so they
count as reports but never drag a statistic down to zero.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from streaming.config import StreamConfig, duration_seconds, spark_interval

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

OUTPUT_SCHEMA_VERSION = 1
PARTITION = "partition"
BROKER = "broker"
DLQ = "dlq"
# The percentile sketch (streaming/jvm Sketch.java): values come back within 1 % of a value
# of the asked rank; past 64 bins per bucket and rate the lowest merge (high ranks stay exact).
SKETCH_ACCURACY = 0.01
SKETCH_MAX_BINS = 64


def _replica_key(entry: Column) -> Column:
    from pyspark.sql import functions as F

    return F.concat(entry["topic"], F.lit(":"), entry["partition"].cast("string"))


def _row(
    kind: str,
    key: Column,
    *,
    event_ms: Column,
    broker_id: Column,
    topic: Column,
    partition: Column,
    role: str | None,
    rates: tuple[Column, Column, Column] | None,
    replicas_covered: Column,
    failure_reason: Column,
    dlq: tuple[Column, Column, Column] | None = None,
) -> Column:
    from pyspark.sql import functions as F

    null_double = F.lit(None).cast("double")
    bytes_in, bytes_out, messages_in = rates or (null_double, null_double, null_double)
    dlq_key, dlq_value, dlq_headers = dlq or (
        F.lit(None).cast("binary"),
        F.lit(None).cast("binary"),
        F.lit(None).cast("array<struct<key:string,value:binary>>"),
    )
    return F.struct(
        F.concat(F.lit(kind + "|"), key).alias("group_key"),
        event_ms.alias("event_ms"),
        F.lit(kind).alias("kind"),
        key.alias("key"),
        broker_id.alias("broker_id"),
        topic.alias("topic"),
        partition.alias("partition"),
        F.lit(role).cast("string").alias("role"),
        bytes_in.alias("bytes_in_per_s"),
        bytes_out.alias("bytes_out_per_s"),
        messages_in.alias("messages_in_per_s"),
        replicas_covered.alias("replicas_covered"),
        failure_reason.alias("failure_reason"),
        dlq_key.alias("dlq_key"),
        dlq_value.alias("dlq_value"),
        dlq_headers.alias("dlq_headers"),
    )


def _load_row_array(field: Callable[[str], Column]) -> Column:
    """The rows of one good record, whose fields ``field(name)`` reads."""
    from pyspark.sql import functions as F

    rates_valid = field("failure").isNull() & field("rate_window_s").isNotNull()
    reassigning = F.transform(field("reassigning"), _replica_key)
    null_int = F.lit(None).cast("int")
    null_str = F.lit(None).cast("string")
    event_ms = field("timestamp_ms")
    broker_id = field("broker_id")

    def leader_rates(e: Column) -> tuple[Column, Column, Column]:
        measured = rates_valid & (e["estimate"] != F.lit("no_baseline"))
        return (
            F.when(measured, e["bytes_in_per_s"]),
            F.when(measured, e["bytes_out_per_s"]),
            F.when(measured, e["messages_in_per_s"]),
        )

    def replica_row(role: str) -> Callable[[Column], Column]:
        def build(e: Column) -> Column:
            return _row(
                PARTITION,
                _replica_key(e),
                event_ms=event_ms,
                broker_id=broker_id,
                topic=e["topic"],
                partition=e["partition"],
                role=role,
                rates=leader_rates(e) if role == "leader" else None,
                replicas_covered=null_int,
                failure_reason=null_str,
            )

        return build

    def not_reassigning(e: Column) -> Column:
        return ~F.array_contains(reassigning, _replica_key(e))

    def outside_reassignment(array: str) -> Column:
        # Usually nothing is being moved: skip the per-replica pass then.
        return F.when(F.size(field("reassigning")) == 0, field(array)).otherwise(
            F.filter(field(array), not_reassigning)
        )

    totals = field("totals")
    broker = _row(
        BROKER,
        broker_id.cast("string"),
        event_ms=event_ms,
        broker_id=broker_id,
        topic=null_str,
        partition=null_int,
        role=None,
        rates=(
            F.when(rates_valid, totals["bytes_in_per_s"]),
            F.when(rates_valid, totals["bytes_out_per_s"]),
            F.when(rates_valid, totals["messages_in_per_s"]),
        ),
        replicas_covered=totals["leader_count"]
        + totals["follower_count"]
        - totals["reassigning_count"],
        failure_reason=field("failure")["reason"],
    )
    return F.concat(
        F.transform(outside_reassignment("leaders"), replica_row("leader")),
        F.transform(outside_reassignment("followers"), replica_row("follower")),
        # Only the first chunk of a sample speaks for the broker (concat with null is null,
        # hence a filtered one-element array rather than when/otherwise).
        F.filter(F.array(broker), lambda _: field("chunk_index") == 0),
    )


def _exploded(df: DataFrame, rows: Column) -> DataFrame:
    from pyspark.sql import functions as F

    return (
        df.select(F.explode(rows).alias("row"))
        .select("row.*")
        .withColumn("event_time", F.timestamp_millis(F.col("event_ms")))
    )


def load_rows(records: DataFrame) -> DataFrame:
    """Good records (one column per BrokerStats field) -> their rows (see :func:`ring_rows`)."""
    from pyspark.sql import functions as F

    return _exploded(records, _load_row_array(F.col))


def ring_rows(validated: DataFrame) -> DataFrame:
    """Validated Kafka rows (streaming.validate) -> one row per replica and broker of each good
    record, and one DLQ row per bad record, in one pass: (group_key, event_ms, event_time,
    kind, key, broker_id, topic, partition, role, rates, replicas_covered, failure_reason,
    dlq_key, dlq_value, dlq_headers). A DLQ row's event time is null, so it neither moves
    the watermark nor is dropped by it."""
    from pyspark.sql import functions as F

    from streaming.validate import dlq_headers, source_origin

    null_int = F.lit(None).cast("int")
    null_str = F.lit(None).cast("string")
    dlq = _row(
        DLQ,
        source_origin(),
        event_ms=F.lit(None).cast("long"),
        broker_id=null_int,
        topic=null_str,
        partition=null_int,
        role=None,
        rates=None,
        replicas_covered=null_int,
        failure_reason=null_str,
        dlq=(F.col("key"), F.col("value"), dlq_headers()),
    )
    good = _load_row_array(lambda name: F.col("record")[name])
    return _exploded(validated, F.when(F.col("reason").isNull(), good).otherwise(F.array(dlq)))


def bucket_loads(rows: DataFrame, cfg: StreamConfig) -> DataFrame:
    """Rows of :func:`ring_rows` -> per key that reported, its window's load (kind, key,
    topic, partition, window_start_ms, window_end_ms, the three rates, samples, reports,
    last_event_ms, leader_id, follower_ids, replicas_covered, failure_reason), and the DLQ
    rows unchanged (kind ``dlq``). Streaming or batch (a batch starts from empty state)."""
    from pyspark.sql import DataFrame as SparkDataFrame

    slide_ms = round(duration_seconds(cfg.slide) * 1000)
    buckets = round(duration_seconds(cfg.window) / duration_seconds(cfg.slide))
    percentile = cfg.percentile
    spark = rows.sparkSession
    ring = spark._jvm.kmedic.spark.BucketRing  # type: ignore[union-attr]
    watermarked = rows.withWatermark("event_time", spark_interval(cfg.watermark))
    jdf = ring.apply(
        watermarked._jdf,
        slide_ms,
        buckets,
        -1.0 if percentile is None else percentile,
        SKETCH_ACCURACY,
        SKETCH_MAX_BINS,
    )
    return SparkDataFrame(jdf, spark)


def _window_fields(cfg: StreamConfig) -> list[Column]:
    from pyspark.sql import functions as F

    return [
        F.col("window_start_ms"),
        F.col("window_end_ms"),
        F.lit(duration_seconds(cfg.window)).alias("window_s"),
        F.lit(duration_seconds(cfg.slide)).alias("slide_s"),
        F.lit(cfg.statistic).alias("statistic"),
        F.col("samples"),
        F.col("reports"),
        F.col("last_event_ms").alias("last_report_ms"),
    ]


def _json(*fields: Column) -> Column:
    from pyspark.sql import functions as F

    return F.to_json(F.struct(*fields), {"ignoreNullFields": "false"})


def _replica_value(cfg: StreamConfig) -> Column:
    """JSON value of a partition row (docs/streaming.md, kmedic.replica-loads).

    The leader replica carries the partition's measured rates; each follower carries the
    leader's bytes-in as its replication bytes-in (what it fetches to stay in sync).
    """
    from pyspark.sql import functions as F

    leader = F.when(
        F.col("leader_id").isNotNull(),
        F.array(
            F.struct(
                F.col("leader_id").alias("broker_id"),
                F.lit("leader").alias("role"),
                F.col("bytes_in_per_s"),
                F.col("bytes_out_per_s"),
                F.col("messages_in_per_s"),
            )
        ),
    ).otherwise(F.array())
    followers = F.transform(
        F.filter(
            F.col("follower_ids"),
            lambda b: F.col("leader_id").isNull() | (b != F.col("leader_id")),
        ),
        lambda b: F.struct(
            b.alias("broker_id"),
            F.lit("follower").alias("role"),
            F.col("bytes_in_per_s").alias("bytes_in_per_s"),
            F.when(F.col("bytes_in_per_s").isNotNull(), F.lit(0.0)).alias("bytes_out_per_s"),
            F.when(F.col("bytes_in_per_s").isNotNull(), F.lit(0.0)).alias("messages_in_per_s"),
        ),
    )
    return _json(
        F.lit(OUTPUT_SCHEMA_VERSION).alias("schema_version"),
        F.col("topic"),
        F.col("partition"),
        *_window_fields(cfg),
        F.col("leader_id"),
        F.col("bytes_in_per_s"),
        F.col("bytes_out_per_s"),
        F.col("messages_in_per_s"),
        F.concat(leader, followers).alias("replicas"),
    )


def _broker_value(cfg: StreamConfig) -> Column:
    """JSON value of a broker row (docs/streaming.md, kmedic.broker-loads)."""
    from pyspark.sql import functions as F

    return _json(
        F.lit(OUTPUT_SCHEMA_VERSION).alias("schema_version"),
        F.col("key").cast("int").alias("broker_id"),
        *_window_fields(cfg),
        F.col("bytes_in_per_s"),
        F.col("bytes_out_per_s"),
        F.col("messages_in_per_s"),
        F.col("replicas_covered"),
        F.col("failure_reason"),
    )


def replica_load_records(current: DataFrame, cfg: StreamConfig) -> DataFrame:
    """(key, value) rows for ``kmedic.replica-loads``: key ``topic:partition``."""
    from pyspark.sql import functions as F

    return current.where(F.col("kind") == PARTITION).select(
        F.col("key"), _replica_value(cfg).alias("value")
    )


def broker_load_records(current: DataFrame, cfg: StreamConfig) -> DataFrame:
    """(key, value) rows for ``kmedic.broker-loads``: key the broker id."""
    from pyspark.sql import functions as F

    return current.where(F.col("kind") == BROKER).select(
        F.col("key"), _broker_value(cfg).alias("value")
    )


def output_records(current: DataFrame, cfg: StreamConfig) -> DataFrame:
    """(topic, key, value, headers) rows for both output topics and the DLQ in one pass (one
    Kafka write): a DLQ row keeps its original key and value bytes."""
    from pyspark.sql import functions as F

    kind = F.col("kind")
    no_headers = F.array().cast("array<struct<key:string,value:binary>>")
    return current.select(
        F.when(kind == PARTITION, F.lit(cfg.topics.replica_loads))
        .when(kind == BROKER, F.lit(cfg.topics.broker_loads))
        .otherwise(F.lit(cfg.topics.dlq))
        .alias("topic"),
        F.when(kind == DLQ, F.col("dlq_key")).otherwise(F.col("key").cast("binary")).alias("key"),
        F.when(kind == PARTITION, _replica_value(cfg).cast("binary"))
        .when(kind == BROKER, _broker_value(cfg).cast("binary"))
        .otherwise(F.col("dlq_value"))
        .alias("value"),
        F.when(kind == DLQ, F.col("dlq_headers")).otherwise(no_headers).alias("headers"),
    )
