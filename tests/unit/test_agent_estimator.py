"""The per-partition traffic estimate: arithmetic on recorded pages and properties."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from agent.estimator import NO_BASELINE, estimate
from agent.exporter import Counters, ExporterSample, PartitionLog, parse_page

DATA = Path(__file__).parent / "data"


def _sample(
    t: float,
    topic: Counters,
    logs: dict[int, PartitionLog],
    broker: Counters | None = None,
) -> ExporterSample:
    return ExporterSample(
        taken_at=t,
        broker=broker or topic,
        topics={"t": topic},
        partitions={("t", p): log for p, log in logs.items()},
        under_replicated=0,
    )


def test_recorded_pages_split_exactly_by_size_delta() -> None:
    prev = parse_page((DATA / "exporter_broker1_t0.prom").read_text(), taken_at=100.0)
    cur = parse_page((DATA / "exporter_broker1_t1.prom").read_text(), taken_at=110.0)
    est = estimate(prev, cur, [("orders", 1), ("orders", 2), ("clicks", 0)])
    assert est.window_s == 10.0
    p1, p2, c0 = est.leaders[("orders", 1)], est.leaders[("orders", 2)], est.leaders[("clicks", 0)]
    # The topic meter moved by 305,994 bytes; the two logs grew by 101,997 and 203,997.
    assert p1.bytes_in_per_s == pytest.approx(10199.7)
    assert p2.bytes_in_per_s == pytest.approx(20399.7)
    assert p1.messages_in_per_s == pytest.approx(20.0)
    assert p2.messages_in_per_s == pytest.approx(40.0)
    assert (p1.estimate, p2.estimate) == ("size_delta", "size_delta")
    assert c0.bytes_in_per_s == 0.0 and c0.estimate == "size_delta"
    assert est.broker.bytes_in_per_s == pytest.approx((439485 - 133491) / 10)
    assert est.broker.messages_in_per_s == pytest.approx(60.0)


def test_first_sample_has_no_baseline() -> None:
    cur = _sample(1.0, Counters(100, 0, 1), {0: PartitionLog(100, 0, 1)})
    est = estimate(None, cur, [("t", 0)])
    assert est.window_s is None
    assert est.leaders == {("t", 0): NO_BASELINE}
    assert est.broker == NO_BASELINE


def test_counter_reset_means_no_baseline() -> None:
    prev = _sample(0.0, Counters(1000, 0, 10), {0: PartitionLog(1000, 0, 10)})
    cur = _sample(10.0, Counters(50, 0, 1), {0: PartitionLog(1050, 0, 11)})
    assert estimate(prev, cur, [("t", 0)]).window_s is None


def test_retention_falls_back_to_message_share() -> None:
    # Partition 1 lost a segment (start offset moved, size shrank) while 400 messages arrived.
    prev = _sample(
        0.0,
        Counters(0, 0, 0),
        {0: PartitionLog(10_000, 0, 100), 1: PartitionLog(90_000, 0, 900)},
    )
    cur = _sample(
        10.0,
        Counters(60_000, 30_000, 600),  # 100 bytes per message on average
        {0: PartitionLog(30_000, 0, 300), 1: PartitionLog(50_000, 500, 1300)},
    )
    est = estimate(prev, cur, [("t", 0), ("t", 1)])
    p0, p1 = est.leaders[("t", 0)], est.leaders[("t", 1)]
    assert p0.estimate == "size_delta" and p1.estimate == "offset_share"
    # p0 appended 20,000 bytes exactly; p1 ~ 400 messages x 100 bytes = 40,000 bytes.
    assert p0.bytes_in_per_s == pytest.approx(2000.0)
    assert p1.bytes_in_per_s == pytest.approx(4000.0)
    assert p0.bytes_out_per_s == pytest.approx(1000.0)
    assert p1.bytes_out_per_s == pytest.approx(2000.0)


def test_idle_topic_with_fetches_is_split_evenly() -> None:
    logs = {0: PartitionLog(10, 0, 1), 1: PartitionLog(10, 0, 1)}
    prev = _sample(0.0, Counters(0, 0, 0), logs)
    cur = _sample(2.0, Counters(0, 4000, 0), logs)
    est = estimate(prev, cur, [("t", 0), ("t", 1)])
    for tp in (("t", 0), ("t", 1)):
        assert est.leaders[tp].bytes_out_per_s == pytest.approx(1000.0)
        assert est.leaders[tp].bytes_in_per_s == 0.0
        assert est.leaders[tp].estimate == "even_split"


def test_partition_missing_from_a_page_has_no_baseline_and_others_keep_the_topic() -> None:
    prev = _sample(0.0, Counters(0, 0, 0), {0: PartitionLog(0, 0, 0)})
    cur = _sample(1.0, Counters(500, 0, 5), {0: PartitionLog(500, 0, 5), 1: PartitionLog(9, 0, 1)})
    est = estimate(prev, cur, [("t", 0), ("t", 1)])
    assert est.leaders[("t", 1)] == NO_BASELINE
    assert est.leaders[("t", 0)].bytes_in_per_s == pytest.approx(500.0)


_grow = st.integers(min_value=0, max_value=10**9)


@given(
    growth=st.lists(st.tuples(_grow, st.integers(0, 10**6)), min_size=1, max_size=8),
    out_bytes=_grow,
    window=st.floats(min_value=0.1, max_value=3600),
)
def test_shares_add_up_to_the_topic_and_follow_the_appends(
    growth: list[tuple[int, int]], out_bytes: int, window: float
) -> None:
    total_bytes = sum(b for b, _ in growth)
    total_msgs = sum(m for _, m in growth)
    assume(total_bytes > 0)
    prev_logs = {p: PartitionLog(1000, 0, 10) for p in range(len(growth))}
    cur_logs = {p: PartitionLog(1000 + b, 0, 10 + m) for p, (b, m) in enumerate(growth)}
    prev = _sample(0.0, Counters(0, 0, 0), prev_logs)
    cur = _sample(window, Counters(total_bytes, out_bytes, total_msgs), cur_logs)
    est = estimate(prev, cur, [("t", p) for p in range(len(growth))])
    rates = [est.leaders[("t", p)] for p in range(len(growth))]
    assert sum(r.bytes_in_per_s for r in rates) == pytest.approx(total_bytes / window)
    assert sum(r.bytes_out_per_s for r in rates) == pytest.approx(out_bytes / window)
    for r, (b, m) in zip(rates, growth, strict=True):
        assert r.bytes_in_per_s == pytest.approx(b / window)  # meter == appends here: exact
        assert r.messages_in_per_s == pytest.approx(m / window)
        assert r.bytes_in_per_s >= 0 and r.bytes_out_per_s >= 0
        assert r.estimate == "size_delta"


@given(
    logs=st.lists(
        st.tuples(_grow, _grow, st.integers(0, 10**6), st.integers(0, 10**6), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    meter=st.tuples(_grow, _grow, st.integers(0, 10**7)),
)
def test_rates_are_never_negative_or_nan(
    logs: list[tuple[int, int, int, int, bool]], meter: tuple[int, int, int]
) -> None:
    prev_logs, cur_logs = {}, {}
    for p, (size_a, size_b, leo_a, leo_b, moved) in enumerate(logs):
        prev_logs[p] = PartitionLog(size_a, 0, leo_a)
        cur_logs[p] = PartitionLog(size_b, 5 if moved else 0, leo_b)
    prev = _sample(0.0, Counters(0, 0, 0), prev_logs)
    cur = _sample(3.0, Counters(*map(float, meter)), cur_logs)
    est = estimate(prev, cur, [("t", p) for p in range(len(logs))])
    for r in est.leaders.values():
        for v in (r.bytes_in_per_s, r.bytes_out_per_s, r.messages_in_per_s):
            assert v >= 0 and v == v  # not NaN
