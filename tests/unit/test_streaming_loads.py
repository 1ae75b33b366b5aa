"""Per-replica rows, window aggregation and the output records, on static DataFrames."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kmedic import brokerstats as bs
from streaming import loads, synthetic, validate
from streaming.config import StreamConfig, ValidationConfig

T0 = 1_700_000_040_000  # a multiple of 60 s, so windows line up with ticks
LAYOUT = synthetic.Layout(brokers=3, topics=1, partitions=3, replication_factor=2)


def _cfg(**overrides: Any) -> StreamConfig:
    base: dict[str, Any] = {"window": "30s", "slide": "10s", "watermark": "1m"}
    base.update(overrides)
    return StreamConfig(**base)


def _records(spark: Any, stats: list[bs.BrokerStats]) -> Any:
    from pyspark.sql import functions as F

    rows = [(b"k", bs.to_json(s), "kmedic.brokerstats", 0, i) for i, s in enumerate(stats)]
    raw = spark.createDataFrame(
        rows, "key binary, value binary, topic string, partition int, offset long"
    ).withColumn("timestamp", F.current_timestamp())
    validated = validate.parse_and_validate(raw, ValidationConfig(max_future_skew="1000d"))
    assert validated.where("reason is not null").count() == 0
    return validate.good_records(validated)


def _stats(broker: int, tick: int, **update: Any) -> bs.BrokerStats:
    stats = synthetic.broker_stats(LAYOUT, broker, T0 + tick * 10_000, tick)
    return stats.model_copy(update=update) if update else stats


def _rows(spark: Any, stats: list[bs.BrokerStats]) -> list[dict[str, Any]]:
    out = loads.load_rows(_records(spark, stats)).collect()
    return [r.asDict() for r in out]


def test_records_explode_to_one_row_per_replica_plus_the_broker(spark: Any) -> None:
    stats = _stats(1, 0)
    rows = _rows(spark, [stats])
    leaders = [r for r in rows if r["role"] == "leader"]
    followers = [r for r in rows if r["role"] == "follower"]
    brokers = [r for r in rows if r["kind"] == loads.BROKER]
    assert {r["key"] for r in leaders} == {f"{x.topic}:{x.partition}" for x in stats.leaders}
    assert {r["key"] for r in followers} == {f"{x.topic}:{x.partition}" for x in stats.followers}
    assert len(rows) == len(stats.leaders) + len(stats.followers) + 1
    by_key = {f"{x.topic}:{x.partition}": x for x in stats.leaders}
    for row in leaders:
        assert row["bytes_in_per_s"] == by_key[row["key"]].bytes_in_per_s
        assert row["bytes_out_per_s"] == by_key[row["key"]].bytes_out_per_s
        assert row["broker_id"] == 1
    assert all(r["bytes_in_per_s"] is None for r in followers)
    (broker,) = brokers
    assert broker["key"] == "1"
    assert broker["bytes_in_per_s"] == stats.totals.bytes_in_per_s
    assert broker["replicas_covered"] == len(stats.leaders) + len(stats.followers)


def test_replicas_in_reassignment_are_left_out(spark: Any) -> None:
    stats = _stats(1, 0)
    moving = stats.leaders[0]
    reassigning = bs.ReassigningReplica(
        topic=moving.topic,
        partition=moving.partition,
        replicas=[1, 2, 3],
        adding_replicas=[3],
        removing_replicas=[2],
    )
    totals = stats.totals.model_copy(update={"reassigning_count": 1})
    rows = _rows(spark, [stats.model_copy(update={"reassigning": [reassigning], "totals": totals})])
    assert f"{moving.topic}:{moving.partition}" not in {r["key"] for r in rows}
    (broker,) = [r for r in rows if r["kind"] == loads.BROKER]
    assert broker["replicas_covered"] == len(stats.leaders) + len(stats.followers) - 1


def test_only_the_first_chunk_speaks_for_the_broker(spark: Any) -> None:
    first = _stats(1, 0, chunk_count=2, followers=[])
    second = _stats(1, 0, chunk_index=1, chunk_count=2, leaders=[])
    rows = _rows(spark, [first, second])
    assert len([r for r in rows if r["kind"] == loads.BROKER]) == 1
    assert len([r for r in rows if r["kind"] == loads.PARTITION]) == len(first.leaders) + len(
        second.followers
    )


def test_unmeasured_rates_are_null_not_zero(spark: Any) -> None:
    failed = _stats(
        1, 0, failure=bs.Failure(reason="exporter_unreachable", message="connection refused")
    )
    no_window = _stats(2, 0, rate_window_s=None)
    base = _stats(3, 0)
    no_baseline = base.model_copy(
        update={"leaders": [x.model_copy(update={"estimate": "no_baseline"}) for x in base.leaders]}
    )
    rows = _rows(spark, [failed, no_window, no_baseline])
    assert all(r["bytes_in_per_s"] is None for r in rows if r["role"] == "leader")
    brokers = {r["key"]: r for r in rows if r["kind"] == loads.BROKER}
    assert brokers["1"]["failure_reason"] == "exporter_unreachable"
    assert brokers["1"]["bytes_in_per_s"] is None and brokers["2"]["bytes_in_per_s"] is None
    assert brokers["3"]["bytes_in_per_s"] == base.totals.bytes_in_per_s


def _current(spark: Any, stats: list[bs.BrokerStats], cfg: StreamConfig) -> Any:
    return loads.bucket_loads(loads.load_rows(_records(spark, stats)), cfg)


def _values(df: Any) -> dict[str, dict[str, Any]]:
    return {r.key: json.loads(r.value) for r in df.collect()}


def _ticks(n: int) -> list[bs.BrokerStats]:
    return [_stats(b, t) for t in range(n) for b in range(1, LAYOUT.brokers + 1)]


def test_replica_loads_carry_the_window_statistic_and_every_replica(spark: Any) -> None:
    cfg = _cfg()
    current = _current(spark, _ticks(5), cfg)
    values = _values(loads.replica_load_records(current, cfg))
    assert set(values) == {f"t0:{p}" for p in range(LAYOUT.partitions)}
    for p in range(LAYOUT.partitions):
        value = values[f"t0:{p}"]
        leader, follower = LAYOUT.replicas(0, p)
        # Latest report at tick 4; the published window is [T0+20s, T0+50s): ticks 2, 3, 4.
        assert value["window_start_ms"] == T0 + 20_000
        assert value["window_end_ms"] == T0 + 50_000
        assert value["last_report_ms"] == T0 + 40_000
        assert value["samples"] == 3
        expected = max(synthetic.partition_rate(0, p, t) for t in (2, 3, 4))
        assert value["bytes_in_per_s"] == expected
        assert value["bytes_out_per_s"] == 2 * expected
        assert value["leader_id"] == leader
        assert value["replicas"] == [
            {
                "broker_id": leader,
                "role": "leader",
                "bytes_in_per_s": expected,
                "bytes_out_per_s": 2 * expected,
                "messages_in_per_s": expected / 100,
            },
            {
                "broker_id": follower,
                "role": "follower",
                "bytes_in_per_s": expected,
                "bytes_out_per_s": 0.0,
                "messages_in_per_s": 0.0,
            },
        ]
        assert value["statistic"] == "max" and value["window_s"] == 30.0


def test_a_percentile_statistic(spark: Any) -> None:
    cfg = _cfg(window="60s", slide="60s", statistic="p50")
    current = _current(spark, _ticks(6), cfg)
    values = _values(loads.replica_load_records(current, cfg))
    rates = sorted(synthetic.partition_rate(0, 1, t) for t in range(6))
    # The lower median of six, read back from the sketch within its 1 % accuracy.
    assert values["t0:1"]["bytes_in_per_s"] == pytest.approx(rates[2], rel=loads.SKETCH_ACCURACY)
    assert values["t0:1"]["statistic"] == "p50"


def test_broker_loads_count_replicas_and_the_last_report(spark: Any) -> None:
    cfg = _cfg()
    stats = _ticks(3)
    current = _current(spark, stats, cfg)
    values = _values(loads.broker_load_records(current, cfg))
    assert set(values) == {"1", "2", "3"}
    for broker in (1, 2, 3):
        own = [s for s in stats if s.broker_id == broker]
        value = values[str(broker)]
        assert value["broker_id"] == broker
        assert value["last_report_ms"] == T0 + 20_000
        assert value["bytes_in_per_s"] == max(s.totals.bytes_in_per_s for s in own)
        assert value["replicas_covered"] == own[-1].totals.leader_count + (
            own[-1].totals.follower_count
        )
        assert value["failure_reason"] is None
        assert value["samples"] == 3


def test_a_failed_last_report_shows_on_the_broker_load(spark: Any) -> None:
    cfg = _cfg()
    failure = bs.Failure(reason="broker_unreachable", message="no route")
    stats = [*_ticks(2), _stats(1, 2, failure=failure, leaders=[], followers=[])]
    values = _values(loads.broker_load_records(_current(spark, stats, cfg), cfg))
    assert values["1"]["failure_reason"] == "broker_unreachable"
    assert values["1"]["last_report_ms"] == T0 + 20_000
    assert values["1"]["bytes_in_per_s"] is not None  # the earlier measured intervals count
    assert values["1"]["samples"] == 2 and values["1"]["reports"] == 3


def test_leadership_moves_follow_the_latest_report(spark: Any) -> None:
    cfg = _cfg()
    first = _stats(1, 0)
    moved = first.leaders[0]
    key = f"{moved.topic}:{moved.partition}"
    # At tick 1 broker 2 leads the partition and broker 1 follows it.
    follower_now = bs.FollowerReplica(
        topic=moved.topic,
        partition=moved.partition,
        leader_id=2,
        log_size_bytes=1,
        log_end_offset=1,
        in_isr=True,
    )
    one_later = _stats(1, 1, leaders=first.leaders[1:], followers=[follower_now])
    two_later = _stats(2, 1, leaders=[moved], followers=[])
    values = _values(
        loads.replica_load_records(_current(spark, [first, one_later, two_later], cfg), cfg)
    )
    assert values[key]["leader_id"] == 2
    assert [r["broker_id"] for r in values[key]["replicas"]] == [2, 1]


def test_one_row_per_key_for_the_window_ending_with_its_latest_bucket(spark: Any) -> None:
    cfg = _cfg(window="60s", slide="10s")
    current = _current(spark, _ticks(3), cfg).collect()
    assert len(current) == len({(r.kind, r.key) for r in current})
    assert {(r.window_start_ms, r.window_end_ms) for r in current} == {(T0 - 30_000, T0 + 30_000)}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("window", "10s"),
        ("window", "50s"),
        ("slide", "80s"),
        ("statistic", "p100"),
        ("statistic", "mean"),
    ],
)
def test_bad_window_settings_are_refused(field: str, value: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=field if field != "window" else "slide"):
        StreamConfig(**{"window": "40s", "slide": "20s", field: value})


def test_output_records_route_each_kind_to_its_topic(spark: Any) -> None:
    cfg = _cfg()
    current = _current(spark, _ticks(2), cfg)
    rows = loads.output_records(current, cfg).collect()
    by_topic: dict[str, dict[str, Any]] = {}
    for row in rows:
        assert row.headers == []
        by_topic.setdefault(row.topic, {})[bytes(row.key).decode()] = json.loads(bytes(row.value))
    assert by_topic == {
        cfg.topics.replica_loads: _values(loads.replica_load_records(current, cfg)),
        cfg.topics.broker_loads: _values(loads.broker_load_records(current, cfg)),
    }
