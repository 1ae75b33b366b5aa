"""The loads feed kept as columns (manager.monitor.load_columns): a record replaces its key's,
a tombstone empties it, rows are reused and grown, and a cycle's join gives each partition
its newest record's fields, or none."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kmedic.replica_columns import partition_keys
from manager.monitor.load_columns import LoadStore, LoadView

TOPICS = ("a", "b.c", "d-e")
op = st.tuples(
    st.sampled_from(TOPICS),
    st.integers(0, 40),
    st.none() | st.floats(0, 1e9),
    st.integers(0, 10**13),
    st.sampled_from([False, False, True]),  # a tombstone
)


@settings(max_examples=150, deadline=None)
@given(st.lists(op, max_size=3000))
def test_the_columns_hold_each_keys_newest_record(
    ops: list[tuple[str, int, float | None, int]],
) -> None:
    store, reference = LoadStore(), {}
    for topic, partition, rate, when, tombstone in ops:
        if tombstone:
            store.remove(topic, partition)
            reference.pop((topic, partition), None)
            continue
        view = LoadView(rate, 2.0, None, when, 3)
        store.put(topic, partition, view)
        reference[(topic, partition)] = view
    assert len(store) == len(reference)
    wanted = [(t, p) for t in TOPICS for p in range(41)]
    names = TOPICS
    keys = partition_keys(
        names,
        np.array([names.index(t) for t, _ in wanted], dtype=np.int32),
        np.array([p for _, p in wanted], dtype=np.int32),
    )
    columns = store.columns()
    assert np.all(np.diff(columns.key) > 0), "sorted, one row per key"
    found, fields = columns.at(keys)
    for i, k in enumerate(wanted):
        view = reference.get(k)
        assert bool(found[i]) == (view is not None)
        if view is None:
            assert math.isnan(fields["bytes_in"][i]) and fields["samples"][i] == 0
            continue
        got = fields["bytes_in"][i]
        assert (math.isnan(got) and view.bytes_in_per_s is None) or got == view.bytes_in_per_s
        assert math.isnan(fields["messages_in"][i])
        assert fields["last_report_ms"][i] == view.last_report_ms
