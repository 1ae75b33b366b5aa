"""The job at the production ratio of window to slide (48), scaled in time: a 48 s window
sliding every second over two and a half windows of reports, drained in many micro-batches, with
late reports inside and outside the window. The loads on the compacted topics equal a direct
computation of the max over the same reports, and the state holds one row per key."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from streaming_support import (
    committed_batches,
    create_topic,
    latest_per_key,
    produce,
    run_in_process,
    spark,
    stream_config,
    unique,
)

from kmedic import brokerstats as bs
from streaming import job, synthetic

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the fixture, imported for pytest

LAYOUT = synthetic.Layout(brokers=4, topics=3, partitions=4, replication_factor=2)
TICKS = 120
SLIDE_MS = 1_000
WINDOW_MS = 48 * SLIDE_MS


def _stats(
    rng: random.Random, broker: int, ms: int, tick: int, scale: float = 1.0
) -> bs.BrokerStats:
    """Synthetic stats with random leader rates, so each window's max is its own."""
    base = synthetic.broker_stats(LAYOUT, broker, ms, tick, interval_s=1.0)
    leaders = [
        r.model_copy(update={"bytes_in_per_s": (rate := scale * rng.uniform(1e3, 1e5)),
                             "bytes_out_per_s": 2 * rate, "messages_in_per_s": rate / 100})
        for r in base.leaders
    ]  # fmt: skip
    totals = base.totals.model_copy(
        update={
            "bytes_in_per_s": sum(r.bytes_in_per_s for r in leaders),
            "bytes_out_per_s": sum(r.bytes_out_per_s for r in leaders),
            "messages_in_per_s": sum(r.messages_in_per_s for r in leaders),
        }
    )
    return base.model_copy(update={"leaders": leaders, "totals": totals})


def _direct(reports: list[bs.BrokerStats]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per partition and per broker: the max over the window ending with the key's latest
    bucket, with its bounds, counts and latest leader, from the reports alone."""
    rows: dict[tuple[str, str], list[tuple[int, str, int, float | None]]] = {}
    for s in reports:
        for r in s.leaders:
            rows.setdefault(("p", f"{r.topic}:{r.partition}"), []).append(
                (s.timestamp_ms, "leader", s.broker_id, r.bytes_in_per_s)
            )
        for f in s.followers:
            rows.setdefault(("p", f"{f.topic}:{f.partition}"), []).append(
                (s.timestamp_ms, "follower", s.broker_id, None)
            )
        rows.setdefault(("b", str(s.broker_id)), []).append(
            (s.timestamp_ms, "", s.broker_id, s.totals.bytes_in_per_s)
        )
    partitions: dict[str, Any] = {}
    brokers: dict[str, Any] = {}
    for (kind, key), items in rows.items():
        last = max(ms for ms, *_ in items)
        end = (last // SLIDE_MS + 1) * SLIDE_MS
        inside = [i for i in items if i[0] >= end - WINDOW_MS]
        rates = [rate for *_, rate in inside if rate is not None]
        want = {
            "window_start_ms": end - WINDOW_MS,
            "window_end_ms": end,
            "last_report_ms": last,
            "samples": len(rates),
            "reports": len(inside),
            "bytes_in_per_s": max(rates),
        }
        if kind == "p":
            leaders = [i for i in inside if i[1] == "leader"]
            want["leader_id"] = max(leaders)[2]
            partitions[key] = want
        else:
            brokers[key] = want
    return partitions, brokers


def test_loads_at_48_buckets_per_window_equal_a_direct_computation(
    local_cluster: Any, spark: Any, tmp_path: Path
) -> None:
    import time

    bootstrap = local_cluster.bootstrap_servers
    source = unique("it.stats48")
    create_topic(bootstrap, source, partitions=3)
    rng = random.Random(48)
    start = (int(time.time() * 1000) // SLIDE_MS) * SLIDE_MS - TICKS * SLIDE_MS
    reports = [
        _stats(rng, broker, start + tick * SLIDE_MS, tick)
        for tick in range(TICKS)
        for broker in range(1, LAYOUT.brokers + 1)
    ]
    # Late, after everything else: broker 1's report from 10 s before the end (inside the
    # window: it must raise the max of what it leads) and broker 2's from 60 s before (outside
    # every window still published: it must change nothing).
    late_inside = _stats(rng, 1, start + (TICKS - 10) * SLIDE_MS + 500, TICKS - 10, scale=100)
    late_outside = _stats(rng, 2, start + (TICKS - 60) * SLIDE_MS + 500, TICKS - 60, scale=100)
    produce(bootstrap, source, ((b"k", bs.to_json(s)) for s in reports))
    produce(bootstrap, source, [(b"1", bs.to_json(late_inside)), (b"2", bs.to_json(late_outside))])

    checkpoint = tmp_path / "checkpoint"
    cfg = stream_config(
        bootstrap,
        source,
        checkpoint,
        window="48s",
        slide="1s",
        watermark="10m",
        available_now=True,
        max_offsets_per_trigger=40,
    )
    run_in_process(spark, cfg)
    assert committed_batches(checkpoint) >= 10  # the state crossed many micro-batches

    want_partitions, want_brokers = _direct([*reports, late_inside, late_outside])
    got_partitions = latest_per_key(bootstrap, cfg.topics.replica_loads)
    got_brokers = latest_per_key(bootstrap, cfg.topics.broker_loads)
    assert set(got_partitions) == set(want_partitions)
    assert set(got_brokers) == set(want_brokers)
    for key, want in want_partitions.items():
        assert {k: got_partitions[key][k] for k in want} == want, key
    for key, want in want_brokers.items():
        assert {k: got_brokers[key][k] for k in want} == want, key
    # The late report inside the window decides the max of what broker 1 leads.
    led = {f"{r.topic}:{r.partition}": r.bytes_in_per_s for r in late_inside.leaders}
    assert all(got_partitions[k]["bytes_in_per_s"] == v for k, v in led.items())

    # One state row per key, whatever window / slide is (48 here).
    state = spark.read.format("statestore").load(str(checkpoint / job.CHECKPOINT_DIR))
    assert state.count() == len(want_partitions) + len(want_brokers)
