"""The planner's per-partition lists of one table, built once and shared.

``ClusterState`` plans on Python lists (one per column: the planner reads them a partition at a
time and moves replicas in them). Building them from the table's columns is most of what an
index costs at fleet size (0.15 s of 0.2 at 433,000 partitions). Each ``ClusterState`` copies
the three lists it moves (replicas, ISR, leader) and shares the rest, which nothing writes.

A table derived from another by rewriting a few rows (``Topics.derived``: a loss the readiness
sweep simulates rewrites the ISR, leader and offline replicas of the dead brokers' partitions)
gets its lists from its base's, with those rows replaced; the base's are built once and kept
while the base table lives. So the sweep's hundreds of scenarios build the cluster's lists once,
not once each.

A cycle's table is new every cycle (a fresh Metadata read), but its partitions are mostly the
last cycle's: the lists that say where the replicas are (topics, partition numbers, replica
tuples) are kept for the next cycle (``_Last``) and reused while the table has the same
partitions, the replica tuples but for the rows whose replicas changed (a reassignment). The
ISR, the leaders, sizes and loads change every cycle or cheaply: they are converted anew, and
not kept (kept, they doubled in memory while the next cycle built its own: 150 MB more at 1.3 M
replicas). The lists are the same as ``_built`` makes for the new table
(tests/unit/test_partition_lists.py), so decide() stays a function of its snapshot: this only
saves the work.

What is kept lives in a ``ListsMemory`` the daemon owns and passes to ``decide()``: nothing in
this module outlives a call.
"""

from __future__ import annotations

import threading
import weakref
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from manager.model.partition_models import Topic
from manager.model.topics import PartitionTable, Ragged, Topics, topics_table


@dataclass(frozen=True)
class PartitionLists:
    """A table's columns as the planner reads them; never written (copy what you move)."""

    topic: list[str]
    number: list[int]
    replicas: list[tuple[int, ...]]
    isr: list[tuple[int, ...]]
    leader: list[int | None]
    # Read only, so kept as arrays (``_read_only``): an element read is a Python number.
    size: Sequence[int]
    bin: Sequence[float]  # loads: 0.0 where unknown
    bout: Sequence[float]
    msgs: Sequence[float]
    valid_load: int  # partitions with a trusted load window
    replica_row: npt.NDArray[np.intp]  # the row of each replica in the replicas column


class ListsMemory:
    """The lists kept between builds: each table's while the table lives (a derived table's
    are its base's, with its rows replaced), and the last cycle's structure for the next
    cycle's. The daemon owns one and hands it to every ``decide()`` it runs, the cycle's and
    the readiness sweep's (which builds in its own thread while a cycle runs: one lock); a
    ``ClusterState`` made without one keeps its lists for itself and what it is copied to."""

    def __init__(self) -> None:
        self._kept: weakref.WeakKeyDictionary[object, PartitionLists] = (
            weakref.WeakKeyDictionary()
        )  # by table
        self._last: _Last | None = None
        self._lock = threading.Lock()

    def lists(self, topics: Sequence[Topic]) -> PartitionLists:
        """The lists of ``topics``' table: kept, derived from its base's, or built."""
        table = topics_table(topics)
        with self._lock:
            kept = self._kept.get(table)
        if kept is not None:
            return kept
        if isinstance(topics, Topics) and topics.derived is not None:
            return _with_rows(self._base(Topics(topics.derived.base)), topics, topics.derived.rows)
        return self._refreshed(topics)  # not kept by table: the next cycle's would double them

    def _refreshed(self, topics: Sequence[Topic]) -> PartitionLists:
        """A cycle's lists: the last cycle's, refreshed from what changed, or built."""
        table = topics_table(topics)
        with self._lock:
            last, self._last = self._last, None  # dropped first: never two full sets at once
        same = (
            last is not None
            and last.names == table.names
            and np.array_equal(last.topic, table.topic)
            and np.array_equal(last.partition, table.partition)
        )
        structure = _structure(last, table) if last is not None and same else None
        del last
        lists = _built(topics, structure)
        kept = _Structure(lists.topic, lists.number, lists.replicas, lists.replica_row)
        with self._lock:
            self._last = _Last(table.names, table.topic, table.partition, table.replicas, kept)
        return lists

    def _base(self, base: Topics) -> PartitionLists:
        """A base table's lists, built once and kept while the table lives."""
        with self._lock:
            kept = self._kept.get(base.table)
        if kept is None:
            kept = _built(base)  # two threads may both build it: the same lists
            with self._lock:
                self._kept[base.table] = kept
        return kept


@dataclass(frozen=True)
class _Last:
    """The last cycle's structure lists, and the columns that tell what changed since."""

    names: tuple[str, ...]
    topic: npt.NDArray[np.int32]
    partition: npt.NDArray[np.int32]
    replicas: Ragged
    structure: _Structure


def _structure(last: _Last, table: PartitionTable) -> _Structure:
    """The topic, number and replica lists of ``table``, which has ``last``'s partitions: the
    last ones, with the rows whose replicas changed made anew."""
    old = last.structure
    changed = np.flatnonzero(~table.replicas.same_rows(last.replicas)).tolist()
    if not changed:
        return _Structure(old.topic, old.number, old.replicas, old.replica_row)
    replicas = list(old.replicas)
    for p in changed:
        replicas[p] = table.replicas.row(p)
    return _Structure(old.topic, old.number, replicas, table.replicas.value_rows())


@dataclass(frozen=True)
class _Structure:
    """What the planner's lists take from where the replicas are (not from the ISR, leaders,
    sizes or loads)."""

    topic: list[str]
    number: list[int]
    replicas: list[tuple[int, ...]]
    replica_row: npt.NDArray[np.intp]


def _built(topics: Sequence[Topic], structure: _Structure | None = None) -> PartitionLists:
    """The lists of ``topics``' table (its ``structure`` given: taken, not made)."""
    table = topics_table(topics)
    n = len(table)
    if structure is None:
        structure = _Structure(
            np.array(table.names, dtype=object)[table.topic].tolist(),
            table.partition.tolist(),
            table.replicas.rows(),
            table.replicas.value_rows(),
        )
    replicas = structure.replicas
    # An in-sync partition's ISR is its replicas, in order, nearly always: the same tuple.
    isr = list(replicas)
    short = np.flatnonzero(~table.isr.same_rows(table.replicas))
    for p, in_sync in zip(short.tolist(), table.isr.take(short).rows(), strict=True):
        isr[p] = in_sync
    leader = table.leader
    leaders: list[int | None] = (
        leader.tolist()
        if n and leader.min() >= 0
        else [None if b < 0 else b for b in leader.tolist()]
    )
    size = _read_only("q", table.size if table.size is not None else np.zeros(n, np.int64))
    loads = table.loads
    if loads is not None:
        known = loads.known
        bin_, bout, msgs = (
            _read_only("d", np.where(known, column, 0.0))
            for column in (loads.bytes_in, loads.bytes_out, loads.messages_in)
        )
        valid = int(np.count_nonzero(known & loads.valid))
    else:
        bin_, bout, msgs = (_read_only("d", np.zeros(n)) for _ in range(3))
        valid = 0
    return PartitionLists(
        topic=structure.topic,
        number=structure.number,
        replicas=replicas,
        isr=isr,
        leader=leaders,
        size=size,
        bin=bin_,
        bout=bout,
        msgs=msgs,
        valid_load=valid,
        replica_row=structure.replica_row,
    )


def _read_only(code: str, column: npt.NDArray[np.generic]) -> Sequence[Any]:
    """A column the planner only reads, a partition at a time: an ``array`` of its values
    (one copy of the bytes; an element becomes a Python number when it is read), not a list
    of 433,000 Python numbers made every cycle."""
    values = array(code)
    values.frombytes(np.ascontiguousarray(column, dtype=np.dtype(code)).tobytes())
    return values


def _with_rows(base: PartitionLists, topics: Topics, rows: Sequence[int]) -> PartitionLists:
    """``base`` with the ISR and leader of ``rows`` as ``topics``' table has them."""
    table = topics.table
    picked = np.array(rows, dtype=np.intp)
    isr, leader = list(base.isr), list(base.leader)
    for p, in_sync, b in zip(
        rows, table.isr.take(picked).rows(), table.leader[picked].tolist(), strict=True
    ):
        isr[p] = in_sync
        leader[p] = None if b < 0 else b
    return PartitionLists(
        base.topic,
        base.number,
        base.replicas,
        isr,
        leader,
        base.size,
        base.bin,
        base.bout,
        base.msgs,
        base.valid_load,
        base.replica_row,
    )
