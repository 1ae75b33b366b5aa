"""bench/timeline.py's buckets and bench_clients' --executor settings: what a bench prints
beside its figures is read from the samples it took, and a setting reaches the manager as the
nested ``executor:`` section it names."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_clients import CLIENT_PRODUCER, broker_settings, executor_settings, latency_csv
from timeline import Sample, buckets, busy_ticks

MB = 1_000_000


def test_each_bucket_shows_the_rates_over_it_the_moves_at_its_end_and_its_latency() -> None:
    samples = [
        Sample(100.0, {1: (0, 0), 3: (0, 0)}, 0),
        Sample(105.0, {1: (5 * MB, 10 * MB), 3: (0, 25 * MB)}, 4),
        Sample(110.0, {1: (10 * MB, 20 * MB), 3: (MB, 50 * MB)}, 2, {1: (3 * MB, None)}),
    ]
    latencies = {100.0: [0.010, 0.020, 0.500], 105.0: []}
    lines = buckets(samples, 100.0, 110.0, lambda a, b: latencies[a])
    assert lines == [
        "     0s moves   4  in/out MB/s 1:2.0/1.0 3:5.0/0.0  3 rec p50 20 p99 500 max 500 ms",
        # Broker 1's leader rate (out) is set at the bucket's end, broker 3 has none.
        "     5s moves   2  in/out MB/s 1:2.0/1.0<-/3.0 3:5.0/0.2  no records",
    ]


def test_a_bucket_shows_the_machines_cpu_and_the_benchs_own_share_where_both_samples_read_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    samples = [
        Sample(100.0, {1: (0, 0)}, 0, None, (1_000, 2_000), 10.0),
        # 5 s: 600 of 1,000 ticks busy; the bench's own 2.5 CPU-seconds of two cores' 10
        Sample(105.0, {1: (MB, MB)}, 0, None, (1_600, 3_000), 12.5),
        Sample(110.0, {1: (2 * MB, 2 * MB)}, 0),  # no CPU read: no column
    ]
    lines = buckets(samples, 100.0, 110.0, lambda a, b: [0.01])
    assert "cpu  60% (bench 25%)  1 rec" in lines[0]
    assert "cpu" not in lines[1]


def test_busy_ticks_reads_the_machines_cpu_counters() -> None:
    busy, total = busy_ticks()
    assert 0 <= busy <= total and total > 0


def test_the_clients_producer_caps_its_requests_and_is_not_idempotent() -> None:
    """Measured at a full 10 Mbit/s link: librdkafka's idempotent producer took 15.6
    CPU-seconds in 30 s at 750 records a second, the same cap without idempotence 1.5; on two
    cores beside the brokers that CPU was the latency the bench measured (docs/bench.md)."""
    assert CLIENT_PRODUCER["acks"] == "all"
    assert CLIENT_PRODUCER["max.in.flight.requests.per.connection"] == 5
    assert CLIENT_PRODUCER["enable.idempotence"] is False


def test_a_bucket_without_a_sample_before_it_is_left_out() -> None:
    samples = [Sample(103.0, {1: (0, 0)}, 0), Sample(104.0, {1: (MB, MB)}, 1)]
    assert buckets(samples, 100.0, 105.0, lambda a, b: [0.01]) == []


def test_executor_settings_nest_dotted_keys_and_read_json_values() -> None:
    assert executor_settings(
        ["max_moves_per_broker=1", "adaptive.ratio=0.5", "adaptive.interval_s=2", "x=on"]
    ) == {"max_moves_per_broker": 1, "adaptive": {"ratio": 0.5, "interval_s": 2}, "x": "on"}


@pytest.mark.parametrize(
    ("pairs", "says"),
    [(["ratio"], "not KEY=VALUE"), (["=1"], "not KEY=VALUE"), (["a=1", "a.b=2"], "'a'")],
)
def test_bad_executor_settings_are_named(pairs: list[str], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        executor_settings(pairs)


def test_broker_settings_are_kafka_properties_and_bad_ones_are_named() -> None:
    assert broker_settings(["replication.quota.window.num=2", " a = b "]) == {
        "replication.quota.window.num": "2",
        "a": "b",
    }
    for bad in ("replication.quota.window.num", "=2", "a="):
        with pytest.raises(ValueError, match="not KEY=VALUE"):
            broker_settings([bad])


def test_the_latency_dump_lists_every_record_in_the_order_produced_with_its_partition() -> None:
    text = latency_csv([(2.0, 0.0125, 7), (1.0, 0.2, 3)], [1.5])
    assert text.splitlines() == [
        "produced_at,partition,latency_ms",
        "1.000,3,200.0",
        "1.500,,",
        "2.000,7,12.5",
    ]
