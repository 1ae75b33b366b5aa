"""The job's wiring: Kafka source and sink, trigger, checkpoint, output topics.

One streaming query, ``kmedic-loads``, reads the source once: records are parsed and validated,
bad ones pass through the stateful step to the DLQ topic (original bytes intact), good ones
become per-key bucket rings (streaming.loads), and each micro-batch's output goes to the two
compacted topics and the DLQ in one Kafka write (``foreachBatch``). The checkpoint holds the
offsets and the rings (``ring/`` under ``checkpoint_location``).

Restart safety: the micro-batch that was running when the job died is replayed on restart from
the same offsets and the same state, so it rewrites the same value per key; the compacted topics
converge to what an uninterrupted run writes. The DLQ is at least once (a replayed batch may
write a bad record a second time, byte for byte).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kmedic.errors import KmedicError, first_line
from kmedic.kafka_client import client_settings
from kmedic.logging import get_logger
from streaming import loads, validate
from streaming.config import StreamConfig, spark_interval
from streaming.supervise import QueryFailed

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter

log = get_logger(__name__)

LOADS_QUERY = "kmedic-loads"
QUERY_NAMES = (LOADS_QUERY,)
# The checkpoint's subdirectory; the two-query job of earlier versions used dlq/ and loads/.
CHECKPOINT_DIR = "ring"


def kafka_options(cfg: StreamConfig) -> dict[str, str]:
    options = client_settings(cfg.cluster_client).spark()
    extra = {f"kafka.{k}": v for k, v in cfg.kafka_options.items()}
    clash = sorted(set(options) & set(extra))
    if clash:
        raise KmedicError(f"kafka_options may not set {', '.join(clash)}: use the kafka: section")
    return {**options, **extra}


def read_source(spark: SparkSession, cfg: StreamConfig) -> DataFrame:
    reader = (
        spark.readStream.format("kafka")
        .options(**kafka_options(cfg))
        .option("subscribe", cfg.topics.brokerstats)
        .option("startingOffsets", cfg.starting_offsets)
        # Records deleted by retention before they were read are gone either way; the job
        # logs the gap (Spark warns) and goes on rather than dying.
        .option("failOnDataLoss", "false")
    )
    if cfg.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(cfg.max_offsets_per_trigger))
    return reader.load()


def _with_trigger(writer: DataStreamWriter, cfg: StreamConfig) -> DataStreamWriter:
    if cfg.available_now:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=spark_interval(cfg.trigger_interval))


def write_to_kafka(df: DataFrame, cfg: StreamConfig, topic: str | None = None) -> None:
    """Batch write of (key, value[, topic, headers]) rows; without ``topic`` each row names
    its own in a ``topic`` column."""
    from pyspark.sql import functions as F

    out = df.withColumns(
        {"key": F.col("key").cast("binary"), "value": F.col("value").cast("binary")}
    )
    writer = out.write.format("kafka").options(**kafka_options(cfg))
    if topic is not None:
        writer = writer.option("topic", topic)
    writer.save()


def batch_writer(cfg: StreamConfig) -> Callable[[DataFrame, int], None]:
    """The foreachBatch function: a micro-batch's loads and DLQ rows -> the two compacted
    topics and the DLQ, in one Kafka write (one Spark job per micro-batch)."""

    def write(updated: DataFrame, batch_id: int) -> None:
        started = time.monotonic()
        write_to_kafka(loads.output_records(updated, cfg), cfg)
        log.info("loads_written", batch=batch_id, seconds=round(time.monotonic() - started, 2))

    return write


def start_queries(spark: SparkSession, cfg: StreamConfig) -> list[StreamingQuery]:
    """Start the job's query; returns it (running) in a list."""
    clear_leftovers(spark)
    source = read_source(spark, cfg)
    validated = validate.parse_and_validate(source, cfg.validation)
    output = loads.bucket_loads(loads.ring_rows(validated), cfg)
    writer = (
        output.writeStream.queryName(LOADS_QUERY)
        .outputMode("update")
        .foreachBatch(batch_writer(cfg))
        .option("checkpointLocation", str(cfg.checkpoint_location / CHECKPOINT_DIR))
    )
    query = _with_trigger(writer, cfg).start()
    log.info(
        "stream_started",
        source=cfg.topics.brokerstats,
        window=cfg.window,
        slide=cfg.slide,
        statistic=cfg.statistic,
        checkpoint=str(cfg.checkpoint_location),
        available_now=cfg.available_now,
    )
    return [query]


def clear_leftovers(spark: SparkSession) -> None:
    """Stop this job's queries that a failed run left active in the session.

    A query whose stop timed out (``spark.sql.streaming.stopTimeout``: its Kafka write was
    blocked on a dead broker's partition) is still running, and Spark refuses to start another
    query of its name. Stopped again here; one still active after that makes this start a
    QueryFailed, so the supervisor backs off and tries again rather than ending the job.
    """
    for query in spark.streams.active:
        if _name(query) not in QUERY_NAMES:
            continue
        stop_queries([query])
        if query.isActive:
            raise QueryFailed(f"query {_name(query)} of the previous run is still stopping")
        log.info("stream_leftover_query_stopped", query=_name(query))


def stop_queries(queries: list[StreamingQuery]) -> None:
    """Stop each query; one that fails to stop (``spark.sql.streaming.stopTimeout``) is logged
    and the others are still stopped."""
    for query in queries:
        try:
            if query.isActive:
                query.stop()
        except Exception as exc:  # py4j: the stop timed out, or the query is already gone
            log.warning("stream_query_not_stopped", query=_name(query), error=first_line(exc))


def _name(query: StreamingQuery) -> str:
    try:
        return str(query.name)
    except Exception:  # the JVM side is gone
        return "?"


def _failure(query: StreamingQuery) -> str | None:
    exc: Any = query.exception()
    if exc is None:
        return None
    return f"query {query.name} failed: {first_line(exc)}"


def await_queries(
    queries: list[StreamingQuery],
    poll_s: float = 1.0,
    on_poll: Callable[[list[StreamingQuery]], None] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Block until every query ends (available-now), ``stop`` is set, or one query fails: then
    stop the others and raise QueryFailed (streaming.supervise decides whether to start
    again). ``on_poll`` sees the queries at every poll and once more at the end (the metrics
    read progress).

    ``stop`` is how a signal ends the job. The handler only sets it: an exception raised by a
    handler lands in whatever py4j call the main thread is in, which leaves that connection
    waiting for an answer that was never read, and the stop that follows can hang.
    """

    def stopping() -> bool:
        return stop is not None and stop.is_set()

    try:
        while not stopping() and any(q.isActive for q in queries):
            if on_poll is not None:
                on_poll(queries)
            for query in queries:
                if not query.isActive and (problem := _failure(query)):
                    raise QueryFailed(problem)
            if stop is None:
                time.sleep(poll_s)
            else:
                stop.wait(poll_s)
        if stopping():
            return
        for query in queries:
            if problem := _failure(query):
                raise QueryFailed(problem)
    finally:
        stop_queries(queries)
        if on_poll is not None:
            on_poll(queries)
