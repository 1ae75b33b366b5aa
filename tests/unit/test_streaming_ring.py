"""The bucket ring (streaming/jvm, streaming.loads.bucket_loads) on static DataFrames: for many
random keys, its loads equal a direct computation of the statistic over the same rows, and
invalid records pass through it to the DLQ untouched."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import pytest

from streaming import loads, validate
from streaming.config import StreamConfig, ValidationConfig

SLIDE_MS = 1_000
BUCKETS = 48
WINDOW_MS = SLIDE_MS * BUCKETS
T0 = 1_700_000_000_000


@dataclass(frozen=True)
class Report:
    key: str
    ms: int
    role: str
    broker: int
    rate: float | None


def _reports(seed: int, keys: int) -> list[Report]:
    rng = random.Random(seed)
    out: list[Report] = []
    for k in range(keys):
        # Spread over three windows, so most keys have reports outside the published one.
        times = rng.sample(range(T0, T0 + 3 * WINDOW_MS), rng.randint(1, 60))
        for ms in times:
            role = rng.choice(["leader", "follower"])
            rate = None if role == "follower" or rng.random() < 0.1 else rng.uniform(1e3, 5e3)
            out.append(Report(f"t:{k}", ms, role, rng.randint(1, 6), rate))
    return out


def _frame(spark: Any, reports: list[Report]) -> Any:
    from pyspark.sql import functions as F

    schema = (
        "group_key string, event_ms long, kind string, key string, broker_id int, topic string,"
        " partition int, role string, bytes_in_per_s double, bytes_out_per_s double,"
        " messages_in_per_s double, replicas_covered int, failure_reason string,"
        " dlq_key binary, dlq_value binary, dlq_headers array<struct<key:string,value:binary>>"
    )
    rows = [
        (f"partition|{r.key}", r.ms, "partition", r.key, r.broker, "t", int(r.key[2:]), r.role,
         r.rate, None if r.rate is None else 2 * r.rate, None, None, None, None, None, None)
        for r in reports
    ]  # fmt: skip
    df = spark.createDataFrame(rows, schema)
    return df.withColumn("event_time", F.timestamp_millis("event_ms"))


def _direct(reports: list[Report], quantile: float | None) -> dict[str, dict[str, Any]]:
    """The window ending with each key's latest bucket, computed from the reports alone."""
    by_key: dict[str, list[Report]] = {}
    for r in reports:
        by_key.setdefault(r.key, []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for key, rows in by_key.items():
        end = (max(r.ms for r in rows) // SLIDE_MS + 1) * SLIDE_MS
        inside = [r for r in rows if r.ms >= end - WINDOW_MS]
        rates = sorted(r.rate for r in inside if r.rate is not None)
        leaders = [r for r in inside if r.role == "leader"]
        if not rates:
            statistic = None
        elif quantile is None:
            statistic = rates[-1]
        else:
            statistic = rates[math.floor(quantile * (len(rates) - 1))]
        out[key] = {
            "window_start_ms": end - WINDOW_MS,
            "window_end_ms": end,
            "samples": len(rates),
            "reports": len(inside),
            "last_event_ms": max(r.ms for r in rows),
            "leader_id": max(leaders, key=lambda r: r.ms).broker if leaders else None,
            "follower_ids": sorted({r.broker for r in inside if r.role == "follower"}),
            "bytes_in_per_s": statistic,
        }
    return out


def _cfg(statistic: str) -> StreamConfig:
    return StreamConfig(window=f"{BUCKETS}s", slide="1s", watermark="1m", statistic=statistic)


@pytest.mark.parametrize("seed", [1, 2])
def test_the_max_equals_a_direct_computation_for_every_key(spark: Any, seed: int) -> None:
    reports = _reports(seed, keys=400)
    got = {r.key: r.asDict() for r in loads.bucket_loads(_frame(spark, reports), _cfg("max"))
           .collect()}  # fmt: skip
    expected = _direct(reports, None)
    assert set(got) == set(expected)
    for key, want in expected.items():
        row = got[key]
        assert {k: row[k] for k in want} == want, key
        assert row["bytes_out_per_s"] == (None if want["bytes_in_per_s"] is None else
                                          2 * want["bytes_in_per_s"])  # fmt: skip


@pytest.mark.parametrize(("statistic", "quantile"), [("p50", 0.5), ("p95", 0.95)])
def test_a_percentile_is_within_the_sketch_accuracy_of_the_direct_one(
    spark: Any, statistic: str, quantile: float
) -> None:
    reports = _reports(3, keys=300)
    got = {r.key: r.asDict() for r in loads.bucket_loads(_frame(spark, reports), _cfg(statistic))
           .collect()}  # fmt: skip
    for key, want in _direct(reports, quantile).items():
        value = got[key]["bytes_in_per_s"]
        if want["bytes_in_per_s"] is None:
            assert value is None, key
        else:
            assert value == pytest.approx(want["bytes_in_per_s"], rel=loads.SKETCH_ACCURACY), key


def test_invalid_records_pass_through_to_the_dlq_untouched(spark: Any) -> None:
    from pyspark.sql import functions as F

    from kmedic import brokerstats as bs
    from streaming import synthetic

    layout = synthetic.Layout(brokers=2, topics=1, partitions=2, replication_factor=2)
    good = bs.to_json(synthetic.broker_stats(layout, 1, T0, 0))
    raw = spark.createDataFrame(
        [(b"k1", good, "src", 0, 7), (b"k2", b"not json", "src", 1, 8)],
        "key binary, value binary, topic string, partition int, offset long",
    ).withColumn("timestamp", F.current_timestamp())
    validated = validate.parse_and_validate(raw, ValidationConfig(max_future_skew="1000d"))
    cfg = StreamConfig(window="30s", slide="10s", watermark="1m")
    out = loads.output_records(loads.bucket_loads(loads.ring_rows(validated), cfg), cfg)
    dlq = [r for r in out.collect() if r.topic == cfg.topics.dlq]
    assert [(bytes(r.key), bytes(r.value)) for r in dlq] == [(b"k2", b"not json")]
    headers = {h.key: bytes(h.value).decode() for h in dlq[0].headers}
    assert headers["kmedic.reason"] == "invalid_json"
    assert headers["kmedic.source"] == "src/1/8"
    loads_topics = {r.topic for r in out.collect()} - {cfg.topics.dlq}
    assert loads_topics == {cfg.topics.replica_loads, cfg.topics.broker_loads}


def test_a_bucket_past_its_bin_cap_keeps_the_high_percentiles(spark: Any) -> None:
    # 200 samples in one bucket, each in its own bin (a factor of 1.1 apart), more than the
    # 64 bins a bucket keeps: the lowest merge, and p95 stays within the sketch's accuracy.
    reports = [Report("t:0", T0 + i, "leader", 1, 1000.0 * 1.1**i) for i in range(200)]
    (row,) = loads.bucket_loads(_frame(spark, reports), _cfg("p95")).collect()
    want = _direct(reports, 0.95)["t:0"]["bytes_in_per_s"]
    assert row.bytes_in_per_s == pytest.approx(want, rel=loads.SKETCH_ACCURACY)
    assert row.samples == 200
