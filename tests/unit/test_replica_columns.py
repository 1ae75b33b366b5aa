"""The agents' replica entries kept as columns (kmedic.replica_columns) give what the entries
as models gave: each partition's size (the last leader's, else the largest follower's, else
0), chunks of one sample joined, and records kept without their lists."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from manager_fakes import stats
from test_observe import _follower, _leader, observation

from kmedic import brokerstats as bs
from kmedic.replica_columns import TOPIC_IDS, ReplicaColumns, TopicIds, partition_keys
from manager.monitor.feed_pair import FeedCopy, merge_agent
from manager.monitor.feed_process import adopted
from manager.monitor.load_columns import LoadColumns
from manager.monitor.observation import AgentView
from manager.monitor.partition_columns import partition_sizes

TOPICS = ("a", "b", "c.d")
entry = st.tuples(st.sampled_from(TOPICS), st.integers(0, 5), st.integers(0, 10**12))


def reference(agents: list[tuple[list[Any], list[Any]]]) -> dict[tuple[str, int], int]:
    """The sizes as the entries-as-models code computed them."""
    sizes = {(t, p): s for leaders, _ in agents for t, p, s in leaders}
    for _, followers in agents:
        for t, p, s in followers:
            if not any((t, p) == (lt, lp) for ls, _ in agents for lt, lp, _ in ls):
                sizes[(t, p)] = max(sizes.get((t, p), 0), s)
    return sizes


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(entry, max_size=6), st.lists(entry, max_size=6)), max_size=4))
def test_sizes_from_the_columns_are_the_sizes_from_the_entries(
    agents: list[tuple[list[Any], list[Any]]],
) -> None:
    views = {}
    for b, (leaders, followers) in enumerate(agents, start=1):
        record = stats(
            b,
            ts=1,
            leaders=[_leader(*e) for e in leaders],
            followers=[_follower(t, p, 1, size) for t, p, size in followers],
        )
        views[b] = AgentView(latest=record, last_healthy_ms=1, healthy=record)
    wanted = [(t, p) for t in TOPICS for p in range(7)]
    names = TOPICS
    topic = np.array([names.index(t) for t, _ in wanted], dtype=np.int32)
    number = np.array([p for _, p in wanted], dtype=np.int32)
    got = partition_sizes(observation(agents=views), partition_keys(names, topic, number))
    want = reference(agents)
    assert got.tolist() == [want.get(k, 0) for k in wanted]


def test_a_record_is_kept_without_its_entries_and_chunks_join() -> None:
    first = stats(1, ts=5, leaders=[_leader("a", 0, 7)], followers=[_follower("b", 1, 1, 3)])
    second = type(first).model_validate(
        {**first.model_dump(), "chunk_index": 1, "leaders": [_leader("a", 1, 9)]}
    )
    one = AgentView(latest=first, last_healthy_ms=5, healthy=first)
    assert one.latest.leaders == [] and one.healthy is not None and one.healthy.followers == []
    assert one.latest is one.healthy, "the newest record is the healthy one: kept once"
    joined = merge_agent(one, AgentView(latest=second, last_healthy_ms=5, healthy=second))
    assert joined.replicas.leader_size.tolist() == [7, 9]
    assert joined.replicas.follower_size.tolist() == [3, 3]
    assert joined.record().replicas is joined.replicas


def test_a_failed_sample_keeps_the_last_healthy_ones_entries() -> None:
    """A failure record after a healthy one dropped that record's entries (the healthy record
    was kept, its columns were not): the broker's partition sizes vanished from the snapshot
    for as long as its samples failed."""
    healthy = stats(1, ts=5, leaders=[_leader("a", 0, 7)], followers=[_follower("b", 1, 1, 3)])
    failed = stats(1, ts=10, failed=True)
    view = merge_agent(
        AgentView(latest=healthy, last_healthy_ms=5, healthy=healthy),
        AgentView(latest=failed, last_healthy_ms=None, healthy=None),
    )
    assert view.latest.failure is not None and view.last_healthy_ms == 5
    assert view.replicas.leader_size.tolist() == [7]
    assert view.replicas.follower_size.tolist() == [3]


def test_a_record_of_the_moving_partitions_updates_the_last_whole_ones() -> None:
    """A busy sample lists only the partitions being moved (scope moving): their entries
    replace the whole record's, every other entry stands, and the header (totals, time) is
    the newer record's. Records of scope moving in a row keep updating."""
    from kmedic.brokerstats import moving_only

    whole = stats(
        1,
        ts=5,
        leaders=[_leader("a", 0, 7), _leader("a", 1, 8)],
        followers=[_follower("b", 1, 2, 3)],
    )
    moving = bs.ReassigningReplica(
        topic="a", partition=1, replicas=[1, 2, 3], adding_replicas=[3], removing_replicas=[]
    )
    busy = stats(
        1,
        ts=10,
        leaders=[_leader("a", 0, 70), _leader("a", 1, 80)],
        followers=[_follower("b", 1, 2, 30)],
        reassigning=[moving],
    )
    light = moving_only(busy)
    assert (light.scope, light.schema_version) == ("moving", 2)
    assert [(r.topic, r.partition) for r in light.leaders] == [("a", 1)] and not light.followers
    view = merge_agent(
        AgentView(latest=whole, last_healthy_ms=5, healthy=whole),
        AgentView(latest=light, last_healthy_ms=10, healthy=light),
    )
    assert view.last_healthy_ms == 10 and view.latest.timestamp_ms == 10
    assert view.replicas.leader_size.tolist() == [7, 80]  # a:0 as the whole record said
    assert view.replicas.follower_size.tolist() == [3]
    later = moving_only(
        type(busy).model_validate(
            {
                **busy.model_dump(),
                "timestamp_ms": 15,
                "sample_id": "s1-15",
                "leaders": [_leader("a", 1, 90)],
            }
        )
    )
    again = merge_agent(view, AgentView(latest=later, last_healthy_ms=15, healthy=later))
    assert again.replicas.leader_size.tolist() == [7, 90]


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(
        st.text("abcdef.-", min_size=1, max_size=6), min_size=1, max_size=8, unique=True
    ),
    order=st.randoms(use_true_random=False),
    partitions=st.lists(st.integers(0, 2**31 - 1), min_size=1, max_size=6),
)
def test_a_copy_from_the_feed_process_joins_by_this_processs_topic_ids(
    names: list[str], order: Any, partitions: list[int]
) -> None:
    """The feed process numbers topics in the order it meets them, this process in its own:
    an adopted copy's load rows and replica entries are found by this process's keys, with
    the values the child held for them."""
    suffix = f"-{order.random()}"
    child_names = [n + suffix for n in names]
    child = TopicIds()
    child_ids = child.of(child_names)
    mine = list(child_names)
    order.shuffle(mine)
    TOPIC_IDS.of(mine)  # met in another order here
    rows = [(t, p) for t in range(len(names)) for p in partitions]
    keys = np.array([int(child_ids[t]) << 32 | p for t, p in rows], dtype=np.int64)
    rates = np.arange(len(rows), dtype=np.float64)
    order_of = np.argsort(keys, kind="stable")
    unique = np.unique(keys[order_of], return_index=True)[1]
    picked = order_of[unique]  # one row per key, sorted by the child's keys
    loads = LoadColumns(
        keys[picked],
        rates[picked],
        rates[picked],
        rates[picked],
        picked.astype(np.int64),
        picked.astype(np.int64),
    )
    view = AgentView(latest=stats(1, ts=5), last_healthy_ms=5, healthy=stats(1, ts=5))
    view = AgentView(view.latest, 5, view.healthy, replace_leaders(view, keys, rates))
    copy = adopted(child.names(), FeedCopy({1: view}, loads))
    wanted = np.array(
        [int(TOPIC_IDS.of([child_names[t]])[0]) << 32 | p for t, p in rows], dtype=np.int64
    )
    found, fields = copy.loads.at(wanted)
    assert found.all()
    by_row = {rows[int(r)]: float(rates[r]) for r in picked}
    assert fields["bytes_in"].tolist() == [by_row[row] for row in rows]
    assert copy.agents[1].replicas.leader_key.tolist() == wanted.tolist()
    assert copy.agents[1].replicas.leader_bytes_in.tolist() == rates.tolist()


def replace_leaders(view: AgentView, keys: Any, rates: Any) -> ReplicaColumns:
    return replace(
        view.replicas,
        leader_key=keys,
        leader_size=keys * 0,
        leader_bytes_in=rates,
        leader_log_start=keys * 0,
        leader_log_end=keys * 0,
        leader_messages_in=rates * 0,
    )
