"""Assembling records: roles (agent.roles), totals, failure records, chunking."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.exporter import parse_page
from agent.record import (
    _FOLLOWERS,
    Header,
    _json_sizes,
    failure_record,
    full_record,
    split_record,
)
from agent.roles import from_metadata
from kmedic import brokerstats as bs
from kmedic.metadata import PartitionInfo, Reassignment

DATA = Path(__file__).parent / "data"
HEADER = Header(
    cluster="dev",
    broker_id=1,
    host="127.0.0.1",
    rack="/r1",
    timestamp_ms=1_700_000_000_000,
    interval_s=10.0,
    agent_version="0.1.0",
    kafka_version="4.1",
)
ROLES = from_metadata(
    [
        PartitionInfo("orders", 0, leader=2, replicas=(2, 1), isr=(2, 1)),
        PartitionInfo("orders", 1, leader=1, replicas=(1, 2), isr=(1, 2)),
        PartitionInfo("orders", 2, leader=1, replicas=(1, 2), isr=(1,)),
        PartitionInfo("clicks", 0, leader=1, replicas=(1,), isr=(1,)),
        PartitionInfo("clicks", 1, leader=2, replicas=(2,), isr=(2,)),
    ],
    broker_id=1,
)
REASSIGNMENTS = {
    ("clicks", 1): Reassignment(replicas=(2, 1), adding=(1,), removing=()),
    ("other", 0): Reassignment(replicas=(3, 4), adding=(4,), removing=(2,)),
}
DIRS = [bs.LogDir(path="/d", total_bytes=100, free_bytes=40, replica_bytes=None, error=None)]


def _pages() -> tuple[object, object]:
    prev = parse_page((DATA / "exporter_broker1_t0.prom").read_text(), 100.0)
    cur = parse_page((DATA / "exporter_broker1_t1.prom").read_text(), 110.0)
    return prev, cur


def test_roles_isr_and_totals() -> None:
    prev, cur = _pages()
    rec = full_record(HEADER, prev, cur, ROLES, REASSIGNMENTS, DIRS)  # type: ignore[arg-type]
    assert [(r.topic, r.partition) for r in rec.leaders] == [
        ("clicks", 0),
        ("orders", 1),
        ("orders", 2),
    ]
    assert [(r.topic, r.partition, r.leader_id, r.in_isr) for r in rec.followers] == [
        ("orders", 0, 2, True)
    ]
    assert [(r.topic, r.partition) for r in rec.reassigning] == [("clicks", 1)]
    assert rec.reassigning[0].adding_replicas == [1]
    t = rec.totals
    assert (t.leader_count, t.follower_count, t.reassigning_count) == (3, 1, 1)
    assert t.under_replicated_count == 1  # orders-2: ISR (1,) of replicas (1, 2)
    assert t.log_size_bytes == 152994 + 254994 + 31497 + 101994
    assert rec.rate_window_s == 10.0
    assert rec.leaders[2].log_end_offset == 500
    assert rec.failure is None
    assert rec.sample_id == "1-1700000000000"
    assert bs.from_json(bs.to_json(rec)) == rec


def test_without_baseline_rates_are_zero_and_flagged() -> None:
    _, cur = _pages()
    rec = full_record(HEADER, None, cur, ROLES, REASSIGNMENTS, DIRS)  # type: ignore[arg-type]
    assert rec.rate_window_s is None
    assert all(r.estimate == "no_baseline" and r.bytes_in_per_s == 0 for r in rec.leaders)


def test_failure_record() -> None:
    failure = bs.Failure(reason="exporter_unreachable", message="refused")
    rec = failure_record(HEADER, failure, DIRS)
    assert rec.failure == failure
    assert rec.leaders == rec.followers == rec.reassigning == []
    assert rec.log_dirs == DIRS
    assert rec.totals.leader_count == 0


def _big_record(leaders: int, followers: int, topic_len: int = 30) -> bs.BrokerStats:
    _, cur = _pages()
    rec = full_record(HEADER, None, cur, ROLES, REASSIGNMENTS, DIRS)  # type: ignore[arg-type]
    leader = rec.leaders[0]
    follower = rec.followers[0]
    topic = "t" * topic_len
    return rec.model_copy(
        update={
            "leaders": [
                leader.model_copy(update={"topic": topic, "partition": i}) for i in range(leaders)
            ],
            "followers": [
                follower.model_copy(update={"topic": topic, "partition": i})
                for i in range(followers)
            ],
        }
    )


def test_small_record_is_one_chunk() -> None:
    rec = _big_record(3, 3)
    assert split_record(rec, 900_000) == [rec]


@settings(max_examples=25, deadline=None)
@given(
    leaders=st.integers(0, 400),
    followers=st.integers(0, 400),
    max_bytes=st.integers(10_000, 60_000),
)
def test_chunks_fit_and_lose_nothing(leaders: int, followers: int, max_bytes: int) -> None:
    rec = _big_record(leaders, followers)
    chunks = split_record(rec, max_bytes)
    assert all(len(bs.to_json(c)) <= max_bytes for c in chunks)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.chunk_count for c in chunks} == {len(chunks)}
    assert {c.sample_id for c in chunks} == {rec.sample_id}
    assert [r for c in chunks for r in c.leaders] == rec.leaders
    assert [r for c in chunks for r in c.followers] == rec.followers
    for c in chunks:
        assert c.totals == rec.totals and c.log_dirs == rec.log_dirs
        assert bs.from_json(bs.to_json(c)) == c


def test_ten_thousand_partitions_fit_in_few_chunks() -> None:
    rec = _big_record(3_400, 6_600, topic_len=40)
    chunks = split_record(rec, 900_000)
    assert 1 < len(chunks) <= 4
    assert sum(len(c.leaders) + len(c.followers) for c in chunks) == 10_000


def test_an_entry_larger_than_the_limit_is_an_error() -> None:
    rec = _big_record(2, 0, topic_len=9_500)
    with pytest.raises(ValueError, match="exceeds max_record_bytes"):
        split_record(rec, 10_000)


def test_uneven_entries_are_cut_until_every_chunk_fits() -> None:
    # Short topic names first, long ones after: a cut at the average size overflows at the
    # end, and those runs are halved until they fit.
    short, long = _big_record(300, 0, topic_len=5), _big_record(300, 0, topic_len=400)
    rec = short.model_copy(update={"leaders": [*short.leaders, *long.leaders]})
    chunks = split_record(rec, 40_000)
    assert all(len(bs.to_json(c)) <= 40_000 for c in chunks)
    assert [r for c in chunks for r in c.leaders] == rec.leaders
    assert len(chunks) > 4


@settings(max_examples=100, deadline=None)
@given(
    topics=st.lists(
        st.one_of(st.sampled_from(["orders", "a},{b", '"}', "x\\y"]), st.text(max_size=8)),
        max_size=6,
    )
)
def test_entry_sizes_are_each_entry_serialised_alone(topics: list[str]) -> None:
    """The chunker's sizes from one serialisation of a list equal each entry's own in bytes
    (the budget is in bytes: a size in characters undercounted non-ASCII names), also when a
    topic name holds the separator it splits on."""
    rec = _big_record(1, 1)
    followers = [
        rec.followers[0].model_copy(update={"topic": t, "partition": i})
        for i, t in enumerate(topics)
    ]
    assert _json_sizes(_FOLLOWERS, followers) == [
        len(f.model_dump_json().encode()) for f in followers
    ]
