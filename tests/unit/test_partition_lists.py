"""The planner's lists of a cycle's table, refreshed from the last cycle's
(manager.analyzer.partition_lists), are the lists built for that table from nothing, whatever
changed between the two: sizes and loads, ISR and leaders, replicas, or the partitions
themselves."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from manager.analyzer.partition_lists import ListsMemory, PartitionLists
from manager.model.partition_models import Partition, PartitionLoad, Topic
from manager.model.topics import Topics

brokers = st.integers(1, 6)


@st.composite
def partitions(draw: Any, number: int) -> Partition:
    replicas = tuple(draw(st.lists(brokers, min_size=1, max_size=3, unique=True)))
    isr = tuple(b for b in replicas if draw(st.booleans()))
    leader = draw(st.sampled_from([*replicas, None]))
    load = draw(
        st.none()
        | st.builds(
            PartitionLoad,
            bytes_in_per_s=st.floats(0, 1e6),
            bytes_out_per_s=st.floats(0, 1e6),
            messages_in_per_s=st.floats(0, 1e3),
            window_valid=st.booleans(),
        )
    )
    return Partition(
        partition=number,
        replicas=replicas,
        isr=isr,
        leader=leader,
        size_bytes=draw(st.integers(0, 10**12)),
        load=load,
    )


@st.composite
def clusters(draw: Any) -> tuple[Topic, ...]:
    names = draw(st.lists(st.sampled_from("abc"), min_size=1, max_size=3, unique=True))
    return tuple(
        Topic(
            name=name,
            partitions=tuple(draw(partitions(n)) for n in range(draw(st.integers(0, 4)))),
        )
        for name in sorted(names)
    )


@st.composite
def changed(draw: Any, before: tuple[Topic, ...]) -> tuple[Topic, ...]:
    """``before`` with some partitions redrawn whole, or only their ISR, leader, size and load
    (where the replicas stay), or (sometimes) a cluster drawn anew."""
    if draw(st.integers(0, 5)) == 0:
        return draw(clusters())
    out = []
    for topic in before:
        parts = []
        for p in topic.partitions:
            fresh = draw(partitions(p.partition))
            how = draw(st.sampled_from(["same", "state", "whole"]))
            if how == "state":
                fresh = fresh.model_copy(
                    update={
                        "replicas": p.replicas,
                        "isr": tuple(b for b in p.replicas if b in fresh.isr),
                        "leader": p.leader,
                    }
                )
            parts.append(p if how == "same" else fresh)
        out.append(topic.model_copy(update={"partitions": tuple(parts)}))
    return tuple(out)


def _equal(a: PartitionLists, b: PartitionLists) -> None:
    for name in ("topic", "number", "replicas", "isr", "leader", "size", "bin", "bout", "msgs"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.valid_load == b.valid_load
    assert np.array_equal(a.replica_row, b.replica_row)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_lists_refreshed_from_the_last_cycle_are_the_lists_built_anew(data: st.DataObject) -> None:
    memory = ListsMemory()
    cluster = data.draw(clusters())
    for _ in range(3):
        refreshed = memory.lists(Topics.of(cluster))  # from the last cycle's, if any
        _equal(refreshed, ListsMemory().lists(Topics.of(cluster)))  # from nothing
        cluster = data.draw(changed(cluster))


def test_a_cycle_with_the_same_partitions_reuses_the_last_topics_and_replicas() -> None:
    memory = ListsMemory()
    parts = tuple(
        Partition(partition=n, replicas=(1, 2), isr=(1, 2), leader=1, size_bytes=n)
        for n in range(3)
    )
    before = memory.lists(Topics.of([Topic(name="t", partitions=parts)]))
    moved = (parts[0].model_copy(update={"replicas": (2, 3), "isr": (2, 3), "leader": 2}),)
    after = memory.lists(Topics.of([Topic(name="t", partitions=moved + parts[1:])]))
    assert after.topic is before.topic and after.number is before.number
    assert after.replicas is not before.replicas  # one row changed: a new list
    assert after.replicas[1] is before.replicas[1] and after.replicas[0] == (2, 3)
