"""The partition table's ragged columns (kmedic.partition_table) answer as lists of tuples
would: rows, selections, row equality, rows holding a broker, sparse rows, replaced rows, rows
holding an id twice or one the other's row does not, and a partition's row in a table
sorted by topic."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kmedic.metadata import PartitionInfo
from kmedic.partition_table import PartitionTable, Ragged

rows = st.lists(st.lists(st.integers(0, 6), max_size=4).map(tuple), max_size=40)


@settings(max_examples=300, deadline=None)
@given(rows, rows, st.data())
def test_ragged_columns_answer_as_lists_of_tuples(
    mine: list[tuple[int, ...]], theirs: list[tuple[int, ...]], data: st.DataObject
) -> None:
    n = min(len(mine), len(theirs))
    mine, theirs = mine[:n], theirs[:n]
    a, b = Ragged.of(mine), Ragged.of(theirs)
    assert a.rows() == mine and [a.row(i) for i in range(n)] == mine
    assert a.same_rows(b).tolist() == [x == y for x, y in zip(mine, theirs, strict=True)]
    ids = data.draw(st.sets(st.integers(0, 6)))
    assert a.rows_with(ids).tolist() == [i for i, r in enumerate(mine) if set(r) & ids]
    order = data.draw(st.permutations(range(n)))
    assert a.take(np.array(order, dtype=np.intp)).rows() == [mine[i] for i in order]
    changed = {i: theirs[i] for i in data.draw(st.sets(st.integers(0, max(n - 1, 0)))) if i < n}
    assert a.with_rows(changed).rows() == [changed.get(i, r) for i, r in enumerate(mine)]
    assert Ragged.sparse(n, changed).rows() == [changed.get(i, ()) for i in range(n)]
    # The column operations a simulated loss is made of.
    assert a.without(ids).rows() == [tuple(b for b in r if b not in ids) for r in mine]
    assert a.only(ids).rows() == [tuple(b for b in r if b in ids) for r in mine]
    assert a.union(b).rows() == [
        tuple(sorted(set(x) | set(y))) for x, y in zip(mine, theirs, strict=True)
    ]
    assert a.firsts().tolist() == [r[0] if r else -1 for r in mine]
    # The snapshot file's checks, column by column.
    assert a.rows_repeating().tolist() == [i for i, r in enumerate(mine) if len(set(r)) < len(r)]
    assert a.rows_outside(b).tolist() == [
        i for i, (x, y) in enumerate(zip(mine, theirs, strict=True)) if not set(x) <= set(y)
    ]
    counts = np.array([len(r) for r in mine], dtype=np.int64)
    assert Ragged.from_counts(counts, a.values).rows() == mine
    picked = sorted(changed)
    replaced = a.replace_rows(
        np.array(picked, dtype=np.intp), Ragged.of([theirs[i] for i in picked])
    )
    assert replaced.rows() == [changed.get(i, r) for i, r in enumerate(mine)]


def test_a_partitions_row_in_a_table_sorted_by_topic() -> None:
    table = PartitionTable.of(
        [
            PartitionInfo("a", 0, 1, (1, 2), (1, 2)),
            PartitionInfo("a", 1, 2, (2, 3), (2,)),
            PartitionInfo("b", 2, 3, (3,), (3,)),  # numbered from 2: found by search
            PartitionInfo("b", 5, 3, (3,), (3,)),
        ]
    )
    assert [table.row_of(*k) for k in (("a", 0), ("a", 1), ("b", 2), ("b", 5))] == [0, 1, 2, 3]
    assert table.row_of("b", 0) is None and table.row_of("c", 0) is None
    assert table.topic_bounds().tolist() == [0, 2, 4]


def test_a_brokers_partitions_are_those_it_holds_or_leads() -> None:
    table = PartitionTable.of(
        [
            PartitionInfo("a", 0, 1, (1, 2), (1, 2)),
            PartitionInfo("a", 1, 2, (2, 3), (2,)),
            PartitionInfo("b", 0, 3, (3,), (3,), ()),
            PartitionInfo("b", 1, 2, (3, 4), (3,)),  # led by 2 mid-reassignment
        ]
    )
    assert [(p.topic, p.partition) for p in table.hosted_by(2)] == [("a", 0), ("a", 1), ("b", 1)]
    assert table.hosted_by(9) == []
