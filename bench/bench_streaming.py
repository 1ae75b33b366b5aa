"""Streaming benchmark at production shape: window / slide = 48, many samples per broker.

A one-broker local cluster is started and a brokerstats topic pre-filled with synthetic
BrokerStats records: B brokers x R replicas (half leaders, replication factor 2), S samples per
broker with varying rates, zstd as the agent publishes. Time is scaled: the production window
of 48 h sliding every 1 h becomes 48 s sliding every 1 s, samples every ``--interval`` seconds of
event time, so S samples cover more than one window and every key's ring fills and turns over.
Then, in the same run:

1. baseline: one Python process consumes the topic (confluent-kafka) and ``json.loads`` every
   record, counting the replicas in it;
2. the job: ``start_queries`` with ``available_now`` over the same topic, writing fresh
   compacted topics and DLQ, timed from start to drained; the Spark session is started before
   the clock runs.

Reported: both rates and their ratio, the micro-batches and their query planning times, the
state rows per key (Spark's state data source over the checkpoint), and the driver JVM's peak
resident memory (VmHWM) beside its heap cap. Prints the figures and replaces the
``## streaming`` section of docs/bench.md (not with --quick).

Usage: .venv/bin/python bench/bench_streaming.py [--brokers 100] [--replicas 2000]
       [--samples 20] [--batch-records 400] [--master local[2]] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_docs import write_section  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from kmedic import brokerstats as bs  # noqa: E402
from kmedic.localcluster import ClusterSpec, LocalCluster  # noqa: E402
from kmedic.localcluster.spark_standalone import standalone_cluster  # noqa: E402
from kmedic.logging import setup_logging  # noqa: E402
from streaming import job, synthetic, topics  # noqa: E402
from streaming.config import (  # noqa: E402
    StreamConfig,
    TopicsConfig,
    ValidationConfig,
    load_stream_config,
)
from streaming.session import build_session  # noqa: E402

SOURCE = "bench.brokerstats"
SOURCE_PARTITIONS = 4
PARTITIONS_PER_TOPIC = 1000


@dataclass
class Result:
    brokers: int
    replicas_per_broker: int
    samples: int
    records: int
    replica_rows: int
    topic_mb: float
    python_s: float
    spark_s: float
    spark_batches: int
    first_planning_s: float
    max_later_planning_s: float
    state_rows: int
    keys: int
    driver_peak_rss_mb: float
    # Other micro-batch sizes, run after the main one: (records per batch, seconds,
    # micro-batches, longest planning of a later batch).
    sweep: list[tuple[int, float, int, float]]
    load_before: float
    load_after: float

    @property
    def python_rate(self) -> float:
        return self.replica_rows / self.python_s

    @property
    def spark_rate(self) -> float:
        return self.replica_rows / self.spark_s


def _layout(brokers: int, replicas: int) -> synthetic.Layout:
    total_partitions = brokers * replicas // 2  # replication factor 2
    return synthetic.Layout(
        brokers=brokers,
        topics=max(1, total_partitions // PARTITIONS_PER_TOPIC),
        partitions=min(PARTITIONS_PER_TOPIC, total_partitions),
        replication_factor=2,
    )


def prefill(
    bootstrap: str, layout: synthetic.Layout, samples: int, interval_s: float, start_ms: int
) -> tuple[int, int, int]:
    """Produce ``samples`` samples per broker in time order; returns (records, replica rows,
    bytes before compression)."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(SOURCE, SOURCE_PARTITIONS, 1)])[SOURCE].result(timeout=30)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": "zstd",
            "message.max.bytes": 4_000_000,
            "linger.ms": 50,
        }
    )
    records = rows = size = 0
    for tick in range(samples):
        ts = start_ms + int(tick * interval_s * 1000)
        for broker in range(1, layout.brokers + 1):
            stats = synthetic.broker_stats(layout, broker, ts, tick, interval_s)
            value = bs.to_json(stats)
            rows += len(stats.leaders) + len(stats.followers)
            size += len(value)
            records += 1
            producer.produce(SOURCE, key=str(broker).encode(), value=value)
            producer.poll(0)
    assert producer.flush(300) == 0, "pre-fill not delivered"
    return records, rows, size


def python_baseline(bootstrap: str, records: int) -> tuple[float, int]:
    """Seconds to consume and json.loads every record; returns (seconds, replicas counted)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{os.getpid()}",
            "enable.auto.commit": False,
            "fetch.message.max.bytes": 4_000_000,
        }
    )
    consumer.assign([TopicPartition(SOURCE, p, 0) for p in range(SOURCE_PARTITIONS)])
    seen = replicas = 0
    started = time.perf_counter()
    while seen < records:
        msg = consumer.poll(1.0)
        if msg is None or msg.error() or (value := msg.value()) is None:
            continue
        record = json.loads(value)
        replicas += len(record["leaders"]) + len(record["followers"])
        seen += 1
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed, replicas


def bench_config(bootstrap: str, workdir: Path, batch_records: int, master: str) -> StreamConfig:
    """The production settings of configs/stream.production.yaml, with the time scaled."""
    production = load_stream_config(ROOT / "configs" / "stream.production.yaml")
    return production.model_copy(
        update={
            "bootstrap": bootstrap,
            "topics": TopicsConfig(brokerstats=SOURCE, replication_factor=1, partitions=4),
            "window": "48s",
            "slide": "1s",
            "watermark": "10m",
            "available_now": True,
            "max_offsets_per_trigger": batch_records,
            "checkpoint_location": workdir / "checkpoint",
            "validation": ValidationConfig(max_future_skew="1h"),
            "metrics_port": None,
            "spark": production.spark.model_copy(
                update={
                    "master": master,
                    "conf": {
                        **production.spark.conf,
                        # A standalone master on loopback: the executors call the driver back.
                        "spark.driver.host": "127.0.0.1",
                        "spark.driver.bindAddress": "127.0.0.1",
                        "spark.executor.memory": "1g",
                        "spark.executor.cores": "1",
                    }
                    if master.startswith("spark://")
                    else production.spark.conf,
                }
            ),
        }
    )


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def spark_job(cfg: StreamConfig) -> tuple[float, int, float, float, int, float]:
    """Seconds for the job to drain the topic; returns (seconds, batches, planning seconds of
    the first batch, the longest planning of a later one, state rows, driver peak RSS MB)."""
    topics.ensure_output_topics(cfg)
    spark = build_session(cfg.spark)
    try:
        started = time.perf_counter()
        queries = job.start_queries(spark, cfg)
        (query,) = queries
        job.await_queries(queries, poll_s=0.2)
        elapsed = time.perf_counter() - started
        progress = [json.loads(p.json) for p in query.recentProgress]
        with_input = [p for p in progress if p["numInputRows"] > 0]
        planning = [p["durationMs"].get("queryPlanning", 0) / 1000 for p in with_input]
        state = spark.read.format("statestore").load(str(cfg.checkpoint_location / "ring"))
        state_rows = state.count()
        jvm = spark.sparkContext._gateway.proc  # type: ignore[union-attr]
        rss = peak_rss_mb(jvm.pid) if jvm is not None else float("nan")
    finally:
        spark.stop()
    return elapsed, len(with_input), planning[0], max(planning[1:], default=0.0), state_rows, rss


def run(
    brokers: int,
    replicas: int,
    samples: int,
    interval_s: float,
    batch_records: int,
    master: str,
    sweep_sizes: list[int],
) -> Result:
    workdir = Path(tempfile.mkdtemp(prefix="kmedic-bench-stream-"))
    load_before = os.getloadavg()[0]
    cluster = LocalCluster.start(
        ClusterSpec(brokers=1, racks=("/r1",), broker_heap_mb=768), workdir / "cluster"
    )
    layout = _layout(brokers, replicas)
    try:
        start_ms = int(time.time() * 1000) - int(samples * interval_s * 1000)
        records, rows, size = prefill(
            cluster.bootstrap_servers, layout, samples, interval_s, start_ms
        )
        print(f"pre-filled {records} records, {rows} replica rows, {size / 1e6:.1f} MB JSON")
        python_s, counted = python_baseline(cluster.bootstrap_servers, records)
        assert counted == rows, f"baseline counted {counted} replicas, expected {rows}"
        print(f"python consume + json.loads: {python_s:.2f} s")
        cfg = bench_config(cluster.bootstrap_servers, workdir, batch_records, master)
        spark_s, batches, first_plan, later_plan, state_rows, rss = spark_job(cfg)
        print(f"spark job (available-now): {spark_s:.2f} s in {batches} micro-batches")
        sweep = []
        for per_batch in sweep_sizes:
            other = bench_config(
                cluster.bootstrap_servers, workdir / f"sweep-{per_batch}", per_batch, master
            )
            seconds, n, _, planning, _, _ = spark_job(other)
            print(f"  {per_batch} records per batch: {seconds:.2f} s in {n} micro-batches")
            sweep.append((per_batch, seconds, n, planning))
    finally:
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    keys = layout.topics * layout.partitions + brokers
    return Result(
        brokers,
        replicas,
        samples,
        records,
        rows,
        size / 1e6,
        python_s,
        spark_s,
        batches,
        first_plan,
        later_plan,
        state_rows,
        keys,
        rss,
        sweep,
        load_before,
        os.getloadavg()[0],
    )


def render(r: Result, cfg_text: str, master: str) -> str:
    return "\n".join(
        [
            "## streaming",
            "",
            "`bench/bench_streaming.py`: a one-broker local cluster, a brokerstats topic",
            f"pre-filled with {r.records:,} synthetic records ({r.brokers:,} brokers x "
            f"{r.replicas_per_broker:,} replicas x {r.samples} samples, half leaders,",
            f"replication factor 2; {r.topic_mb:.0f} MB of JSON before zstd). The job runs",
            f"`available_now` on `{master}` with the production settings of",
            f"`configs/stream.production.yaml` ({cfg_text}), time scaled: a 48 s window",
            "sliding every 1 s (window / slide = 48, as 48 h / 1 h), the samples spread over",
            "more than one window so every ring fills and turns over. Timed from start to",
            "drained, Spark session started before the clock. The baseline is one Python",
            "process consuming the same records with confluent-kafka and `json.loads`-ing",
            "each (nothing else).",
            f"Load average on the 2 cores: {r.load_before:.1f} before, {r.load_after:.1f} after.",
            "",
            "| pipeline | seconds | replica rows/s |",
            "| --- | ---: | ---: |",
            f"| Spark job, {master} ({r.spark_batches} micro-batches) | {r.spark_s:.1f} | "
            f"{r.spark_rate:,.0f} |",
            f"| Python consume + json.loads | {r.python_s:.1f} | {r.python_rate:,.0f} |",
            "",
            f"- Ratio (Spark job / plain parse): **1 : {r.python_rate / r.spark_rate:,.1f}**.",
            f"- Query planning: {r.first_planning_s:.2f} s in the first micro-batch, at most "
            f"{r.max_later_planning_s:.2f} s in a later one.",
            f"- State: {r.state_rows:,} rows for {r.keys:,} keys "
            f"({r.state_rows / r.keys:.2f} per key; window / slide = 48).",
            f"- Driver JVM peak resident memory: {r.driver_peak_rss_mb:,.0f} MB "
            "(heap capped by `spark.driver_memory`; the rest is RocksDB, Kafka client",
            "  buffers and the JVM's own).",
            "",
            *_sweep_table(r),
        ]
    )


def _sweep_table(r: Result) -> list[str]:
    if not r.sweep:
        return []
    rows = [
        f"| {size:,} | {n} | {seconds:.1f} | {r.replica_rows / seconds:,.0f} | {planning:.2f} |"
        for size, seconds, n, planning in sorted(r.sweep)
    ]
    return [
        "Other micro-batch sizes over the same topic (same JVM, after the run above):",
        "",
        "| records per micro-batch | micro-batches | seconds | replica rows/s "
        "| longest later planning (s) |",
        "| ---: | ---: | ---: | ---: | ---: |",
        *rows,
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--replicas", type=int, default=2000, help="replicas per broker")
    parser.add_argument("--samples", type=int, default=20, help="samples per broker")
    parser.add_argument(
        "--interval", type=float, default=3.0, help="event-time seconds between samples"
    )
    parser.add_argument(
        "--batch-records",
        type=int,
        default=None,
        help="maxOffsetsPerTrigger (default: the production config's)",
    )
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--sweep",
        default="",
        help="other records-per-batch sizes to time after the main run, e.g. 100,1000",
    )
    parser.add_argument(
        "--standalone-workers",
        type=int,
        default=0,
        help="run on a Spark standalone cluster of this many 1-core workers (overrides --master)",
    )
    parser.add_argument("--quick", action="store_true", help="20 x 200 x 20, docs untouched")
    args = parser.parse_args()
    setup_logging("WARNING")
    production = load_stream_config(ROOT / "configs" / "stream.production.yaml")
    batch = args.batch_records or production.max_offsets_per_trigger or 1000
    brokers, replicas = (20, 200) if args.quick else (args.brokers, args.replicas)
    sweep = [int(x) for x in args.sweep.split(",") if x.strip()]
    if args.standalone_workers:
        with standalone_cluster(
            Path(tempfile.mkdtemp(prefix="kmedic-bench-spark-")),
            workers=args.standalone_workers,
            memory="1536m",
        ) as spark_cluster:
            master = spark_cluster.master_url
            result = run(brokers, replicas, args.samples, args.interval, batch, master, sweep)
            master = f"a standalone cluster of {args.standalone_workers} x 1-core worker(s)"
    else:
        master = args.master
        result = run(brokers, replicas, args.samples, args.interval, batch, master, sweep)
    cfg_text = (
        f"{production.spark.driver_memory} driver, {production.spark.shuffle_partitions} "
        f"shuffle partitions, at most {batch} records per micro-batch, {production.statistic}"
    )
    text = render(result, cfg_text, master)
    print(text)
    if not args.quick:
        section = (
            f"streaming-standalone-{args.standalone_workers}"
            if args.standalone_workers
            else "streaming"
        )
        write_section(section, text.replace("## streaming", f"## {section}", 1))


if __name__ == "__main__":
    main()
