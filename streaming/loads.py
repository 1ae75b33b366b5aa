"""From valid BrokerStats records to windowed loads (pure DataFrame transforms, no I/O).

1. :func:`load_rows` explodes each record into one row per replica it reports (leaders and
   followers, minus partitions with a reassignment in progress) plus one row for the broker
   (from the first chunk of a sample only, since every chunk repeats the broker totals).
2. :func:`window_loads` keeps, per sliding event-time window and key, the statistic (max or a
   percentile) of the per-interval rates. Partition rows and broker rows share one aggregation
   (``kind`` is part of the key) so the whole job is one stateful query.
3. :func:`current_windows` picks, per key, the window that holds the key's latest report and the
   most history before it; :func:`replica_load_records` and :func:`broker_load_records` turn those
   into the JSON values of the compacted output topics (docs/streaming.md).

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


def _replica_key(entry: Column) -> Column:
    from pyspark.sql import functions as F

    return F.concat(entry["topic"], F.lit(":"), entry["partition"].cast("string"))


def _row(
    kind: str,
    key: Column,
    *,
    topic: Column,
    partition: Column,
    role: str | None,
    rates: tuple[Column, Column, Column] | None,
    replicas_covered: Column,
    failure_reason: Column,
) -> Column:
    from pyspark.sql import functions as F

    null_double = F.lit(None).cast("double")
    bytes_in, bytes_out, messages_in = rates or (null_double, null_double, null_double)
    return F.struct(
        F.lit(kind).alias("kind"),
        key.alias("key"),
        topic.alias("topic"),
        partition.alias("partition"),
        F.lit(role).cast("string").alias("role"),
        bytes_in.alias("bytes_in_per_s"),
        bytes_out.alias("bytes_out_per_s"),
        messages_in.alias("messages_in_per_s"),
        replicas_covered.alias("replicas_covered"),
        failure_reason.alias("failure_reason"),
    )


def load_rows(records: DataFrame) -> DataFrame:
    """Valid records -> rows (event_time, broker_id, kind, key, topic, partition, role, rates,
    replicas_covered, failure_reason)."""
    from pyspark.sql import functions as F

    rates_valid = F.col("failure").isNull() & F.col("rate_window_s").isNotNull()
    reassigning = F.transform(F.col("reassigning"), _replica_key)
    null_int = F.lit(None).cast("int")
    null_str = F.lit(None).cast("string")

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
        return F.when(F.size(F.col("reassigning")) == 0, F.col(array)).otherwise(
            F.filter(F.col(array), not_reassigning)
        )

    totals = F.col("totals")
    broker = _row(
        BROKER,
        F.col("broker_id").cast("string"),
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
        failure_reason=F.col("failure")["reason"],
    )
    rows = F.concat(
        F.transform(outside_reassignment("leaders"), replica_row("leader")),
        F.transform(outside_reassignment("followers"), replica_row("follower")),
        # Only the first chunk of a sample speaks for the broker (concat with null is null,
        # hence a filtered one-element array rather than when/otherwise).
        F.filter(F.array(broker), lambda _: F.col("chunk_index") == 0),
    )
    return records.select(
        F.timestamp_millis(F.col("timestamp_ms")).alias("event_time"),
        F.col("broker_id"),
        F.explode(rows).alias("row"),
    ).select("event_time", "broker_id", "row.*")


def _statistic(column: str, cfg: StreamConfig) -> Column:
    from pyspark.sql import functions as F

    p = cfg.percentile
    if p is None:
        return F.max(column)
    return F.percentile_approx(column, p, 10_000)


def window_loads(rows: DataFrame, cfg: StreamConfig) -> DataFrame:
    """Per (window, kind, key): the statistic of each rate, counts and the latest report."""
    from pyspark.sql import functions as F

    is_leader = F.col("role") == F.lit("leader")
    return (
        rows.withWatermark("event_time", spark_interval(cfg.watermark))
        .groupBy(
            F.window("event_time", spark_interval(cfg.window), spark_interval(cfg.slide)),
            "kind",
            "key",
            "topic",
            "partition",
        )
        .agg(
            _statistic("bytes_in_per_s", cfg).alias("bytes_in_per_s"),
            _statistic("bytes_out_per_s", cfg).alias("bytes_out_per_s"),
            _statistic("messages_in_per_s", cfg).alias("messages_in_per_s"),
            F.count("bytes_in_per_s").alias("samples"),
            F.count(F.lit(1)).alias("reports"),
            F.max("event_time").alias("last_event_time"),
            F.max_by(
                F.when(is_leader, F.col("broker_id")), F.when(is_leader, F.col("event_time"))
            ).alias("leader_id"),
            F.array_sort(F.collect_set(F.when(~is_leader, F.col("broker_id")))).alias(
                "follower_ids"
            ),
            F.max_by("replicas_covered", "event_time").alias("replicas_covered"),
            F.max_by("failure_reason", "event_time").alias("failure_reason"),
        )
    )


def current_windows(updated: DataFrame, cfg: StreamConfig) -> DataFrame:
    """Per key, the one window to publish from a micro-batch's updated rows (a static
    DataFrame): the window holding the key's latest report with the most history before it,
    i.e. the one ending within one slide after that report.

    A key whose such window was not updated in this batch is not published in it: then every
    value ever written for a key is "its canonical window as of some batch", and the last one
    written is the same after a kill and restart as in an uninterrupted run (as long as a key's
    reports arrive less than one window late).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    slide_ms = round(duration_seconds(cfg.slide) * 1000)
    by_key = Window.partitionBy("kind", "key").orderBy(
        F.col("last_event_time").desc(), F.col("window.end").asc()
    )
    canonical = F.unix_millis(F.col("window.end")) - F.lit(slide_ms) <= F.unix_millis(
        F.col("last_event_time")
    )
    return (
        updated.withColumn("_rank", F.row_number().over(by_key))
        .where((F.col("_rank") == 1) & canonical)
        .drop("_rank")
    )


def _window_fields(cfg: StreamConfig) -> list[Column]:
    from pyspark.sql import functions as F

    return [
        F.unix_millis(F.col("window.start")).alias("window_start_ms"),
        F.unix_millis(F.col("window.end")).alias("window_end_ms"),
        F.lit(duration_seconds(cfg.window)).alias("window_s"),
        F.lit(duration_seconds(cfg.slide)).alias("slide_s"),
        F.lit(cfg.statistic).alias("statistic"),
        F.col("samples"),
        F.col("reports"),
        F.unix_millis(F.col("last_event_time")).alias("last_report_ms"),
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
    """(topic, key, value) rows for both output topics in one pass (one Kafka write)."""
    from pyspark.sql import functions as F

    is_partition = F.col("kind") == PARTITION
    return current.select(
        F.when(is_partition, F.lit(cfg.topics.replica_loads))
        .otherwise(F.lit(cfg.topics.broker_loads))
        .alias("topic"),
        F.col("key"),
        F.when(is_partition, _replica_value(cfg)).otherwise(_broker_value(cfg)).alias("value"),
    )
