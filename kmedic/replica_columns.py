"""A BrokerStats record's replica entries as columns, as the manager keeps them.

An agent's record lists every replica of its broker (a leader's rates and log size, a
follower's leader and log size): at fleet scale 1.3 M entries, which as validated models held
1.7 GB of the manager (docs/bench.md, "cycle"). The manager keeps each record's scalar fields
as the model and its entries as arrays, keyed by ``topic id << 32 | partition`` with topic ids
from one process-wide table of names (``TOPIC_IDS``), so that joins across records, and with
the snapshot's partition table, are sorted-array lookups.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from kmedic.brokerstats import BrokerStats

Keys = npt.NDArray[np.int64]


class TopicIds:
    """Topic name -> a small id, for as long as the process lives (ids are never reused; a
    deleted topic's stays: a few bytes per name ever seen)."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}
        self._lock = threading.Lock()

    def of(self, names: Iterable[str]) -> npt.NDArray[np.int64]:
        ids = self._ids
        with self._lock:
            return np.array([ids.setdefault(n, len(ids)) for n in names], dtype=np.int64)

    def one(self, name: str) -> int:
        """The id of one name (a record's, as it arrives)."""
        found = self._ids.get(name)
        if found is not None:
            return found
        with self._lock:
            return self._ids.setdefault(name, len(self._ids))

    def names(self) -> list[str]:
        """Every name, at its id (another process's keys are translated by it: ``rekeyed``)."""
        with self._lock:
            return list(self._ids)


TOPIC_IDS = TopicIds()


def keys_of(topic_ids: npt.NDArray[np.int64], partitions: npt.NDArray[np.integer]) -> Keys:
    return (topic_ids << 32) | partitions.astype(np.int64)


def rekeyed(keys: Keys, ids: npt.NDArray[np.int64]) -> Keys:
    """``keys`` of another process's topic ids in this one's: ``ids[i]`` is this process's id
    of that process's topic ``i``."""
    translated: Keys = (ids[keys >> 32] << 32) | (keys & 0xFFFFFFFF)
    return translated


def partition_keys(
    names: Sequence[str], topic: npt.NDArray[np.int32], partition: npt.NDArray[np.int32]
) -> Keys:
    """The keys of a partition table's rows (``names[topic[i]]``, ``partition[i]``)."""
    return keys_of(TOPIC_IDS.of(names)[topic], partition)


def _int(values: list[int]) -> npt.NDArray[np.int64]:
    return np.array(values, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class ReplicaColumns:
    """The entries as columns: the leaders' first (``LEADER_COLUMNS``), then the followers'.
    Log offsets are kept for the last resort's arithmetic (manager.analyzer.recovery): what a
    replica holds, and how far its leader had written, as the agent last sampled them."""

    leader_key: Keys
    leader_size: npt.NDArray[np.int64]
    leader_bytes_in: npt.NDArray[np.float64]
    leader_log_start: npt.NDArray[np.int64]
    leader_log_end: npt.NDArray[np.int64]
    leader_messages_in: npt.NDArray[np.float64]
    follower_key: Keys
    follower_size: npt.NDArray[np.int64]
    follower_leader: npt.NDArray[np.int64]  # -1: none
    follower_log_end: npt.NDArray[np.int64]

    LEADER_COLUMNS: ClassVar[int] = 6

    @classmethod
    def of(cls, stats: BrokerStats) -> ReplicaColumns:
        leaders, followers = stats.leaders, stats.followers
        names = sorted({r.topic for r in leaders} | {r.topic for r in followers})
        ids = dict(zip(names, TOPIC_IDS.of(names).tolist(), strict=True))
        return cls(
            _int([ids[r.topic] << 32 | r.partition for r in leaders]),
            _int([r.log_size_bytes for r in leaders]),
            np.array([r.bytes_in_per_s for r in leaders], dtype=np.float64),
            _int([r.log_start_offset for r in leaders]),
            _int([r.log_end_offset for r in leaders]),
            np.array([r.messages_in_per_s for r in leaders], dtype=np.float64),
            _int([ids[r.topic] << 32 | r.partition for r in followers]),
            _int([r.log_size_bytes for r in followers]),
            _int([r.leader_id for r in followers]),
            _int([r.log_end_offset for r in followers]),
        )

    def joined(self, other: ReplicaColumns) -> ReplicaColumns:
        """This chunk's entries, then ``other``'s (chunks of one sample)."""
        return ReplicaColumns(
            *(
                np.concatenate([mine, theirs])
                for mine, theirs in zip(self._columns(), other._columns(), strict=True)
            )
        )

    def updated(self, newer: ReplicaColumns) -> ReplicaColumns:
        """These entries with ``newer``'s in place of any of the same partition, and
        ``newer``'s others added (a record of scope moving over the last whole one)."""
        both = [
            np.concatenate([a, b]) for a, b in zip(self._columns(), newer._columns(), strict=True)
        ]
        leaders, followers = both[: self.LEADER_COLUMNS], both[self.LEADER_COLUMNS :]
        lead, follow = _last_rows(leaders[0]), _last_rows(followers[0])
        return ReplicaColumns(*(c[lead] for c in leaders), *(c[follow] for c in followers))

    def rekeyed(self, ids: npt.NDArray[np.int64]) -> ReplicaColumns:
        """These entries with their keys in other topic ids (module ``rekeyed``); the rows keep
        their order."""
        return replace(
            self,
            leader_key=rekeyed(self.leader_key, ids),
            follower_key=rekeyed(self.follower_key, ids),
        )

    def _columns(self) -> tuple[npt.NDArray[np.generic], ...]:
        return tuple(getattr(self, f.name) for f in fields(self))

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self._columns())

    @classmethod
    def empty(cls) -> ReplicaColumns:
        whole, real = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
        leader = (whole, whole, real, whole, whole, real)
        return cls(*leader, whole, whole, whole, whole)


EMPTY = ReplicaColumns.empty()


def stripped(stats: BrokerStats) -> BrokerStats:
    """The record without its replica entries (kept as columns instead)."""
    if not stats.leaders and not stats.followers:
        return stats
    return stats.model_copy(update={"leaders": [], "followers": []})


@dataclass(frozen=True, eq=False)
class AgentRecord:
    """One broker's newest record: its scalar fields, and its replicas as columns."""

    stats: BrokerStats
    replicas: ReplicaColumns

    @classmethod
    def of(cls, stats: BrokerStats) -> AgentRecord:
        return cls(stripped(stats), ReplicaColumns.of(stats))


def _last_rows(keys: Keys) -> npt.NDArray[np.intp]:
    """The row of each key's last occurrence, in key order."""
    _, first = np.unique(keys[::-1], return_index=True)
    return len(keys) - 1 - first


def last_wins(keys: Keys, values: npt.NDArray[np.generic]) -> tuple[Keys, npt.NDArray[np.generic]]:
    """Sorted unique keys, each with the value of its last occurrence."""
    unique, first = np.unique(keys[::-1], return_index=True)
    return unique, values[::-1][first]


def join(
    sorted_keys: Keys, values: npt.NDArray[Any], wanted: Keys, default: float
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[Any]]:
    """For each wanted key: whether ``sorted_keys`` has it, and its value (else ``default``)."""
    if not len(sorted_keys):
        return np.zeros(len(wanted), dtype=np.bool_), np.full(len(wanted), default, values.dtype)
    at = np.minimum(np.searchsorted(sorted_keys, wanted), len(sorted_keys) - 1)
    found = sorted_keys[at] == wanted
    return found, np.where(found, values[at], default).astype(values.dtype)


def largest_by_key(keys: Keys, values: npt.NDArray[np.int64]) -> tuple[Keys, npt.NDArray[np.int64]]:
    """Sorted unique keys, each with its largest value."""
    if not len(keys):
        return keys, values
    order = np.argsort(keys, kind="stable")
    unique, starts = np.unique(keys[order], return_index=True)
    return unique, np.maximum.reduceat(values[order], starts)
