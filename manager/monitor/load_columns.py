"""The loads feed kept as columns: one row per partition key of kmedic.replica-loads, its
rates and report time in arrays, never a Python object per partition (433,000 at fleet
scale). The feed's thread writes rows as records arrive; a cycle takes a sorted copy
(``LoadColumns``) and joins it to the snapshot's partitions by key
(``kmedic.replica_columns``: ``topic id << 32 | partition``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from kmedic.kafka_client import Cluster
from kmedic.replica_columns import TOPIC_IDS, Keys, join, rekeyed
from manager.monitor.feeds import LatestByKey

TopicPartition = tuple[str, int]

NAN = float("nan")
# Each field, and what a partition without a record gets.
FIELDS = {"bytes_in": NAN, "bytes_out": NAN, "messages_in": NAN, "last_report_ms": 0, "samples": 0}


@dataclass(frozen=True, slots=True)
class LoadView:
    """One partition's record of kmedic.replica-loads."""

    bytes_in_per_s: float | None
    bytes_out_per_s: float | None
    messages_in_per_s: float | None
    last_report_ms: int
    samples: int


@dataclass(frozen=True, eq=False)
class LoadColumns:
    """The newest load record of each partition, sorted by key; NaN: the record had none."""

    key: Keys
    bytes_in: npt.NDArray[np.float64]
    bytes_out: npt.NDArray[np.float64]
    messages_in: npt.NDArray[np.float64]
    last_report_ms: npt.NDArray[np.int64]
    samples: npt.NDArray[np.int64]

    @classmethod
    def of(cls, views: Mapping[TopicPartition, LoadView]) -> LoadColumns:
        """Columns of load records by partition (tests, and a feed's ``LoadStore``)."""
        store = LoadStore()
        for (topic, partition), view in views.items():
            store.put(topic, partition, view)
        return store.columns()

    def __len__(self) -> int:
        return len(self.key)

    def rekeyed(self, ids: npt.NDArray[np.int64]) -> LoadColumns:
        """These rows with their keys in other topic ids (``kmedic.replica_columns.rekeyed``),
        sorted by the new keys."""
        keys = rekeyed(self.key, ids)
        order = np.argsort(keys, kind="stable")
        return LoadColumns(
            keys[order],
            self.bytes_in[order],
            self.bytes_out[order],
            self.messages_in[order],
            self.last_report_ms[order],
            self.samples[order],
        )

    def at(self, wanted: Keys) -> tuple[npt.NDArray[np.bool_], dict[str, npt.NDArray[Any]]]:
        """For each wanted key: whether a record is held, and its fields (NaN / 0 if not)."""
        found, _ = join(self.key, self.key, wanted, 0)
        fields = {
            name: join(self.key, getattr(self, name), wanted, none)[1]
            for name, none in FIELDS.items()
        }
        return found, fields


class LoadStore:
    """Rows in arrays grown by doubling, found by topic id then partition number (an array of
    rows per topic, never a Python object per partition); a removed key's row is left empty
    and used again."""

    def __init__(self) -> None:
        self._rows: list[npt.NDArray[np.int64]] = []  # by topic id: each partition's row, -1
        self._count = 0
        self._free: list[int] = []
        self._key = np.zeros(0, dtype=np.int64)
        self._floats = np.zeros((3, 0))
        self._ints = np.zeros((2, 0), dtype=np.int64)

    def put(self, topic: str, partition: int, view: LoadView) -> None:
        tid = TOPIC_IDS.one(topic)
        rows = self._topic_rows(tid, partition)
        row = int(rows[partition])
        if row < 0:
            row = self._free.pop() if self._free else self._count
            if row >= len(self._key):
                self._grow()
            self._count += 1
            rows[partition] = row
            self._key[row] = tid << 32 | partition
        rates = (view.bytes_in_per_s, view.bytes_out_per_s, view.messages_in_per_s)
        self._floats[:, row] = [NAN if r is None else r for r in rates]
        self._ints[:, row] = (view.last_report_ms, view.samples)

    def remove(self, topic: str, partition: int) -> None:
        tid = TOPIC_IDS.one(topic)
        if tid >= len(self._rows) or partition >= len(self._rows[tid]):
            return
        row = int(self._rows[tid][partition])
        if row >= 0:
            self._rows[tid][partition] = -1
            self._key[row] = -1
            self._free.append(row)
            self._count -= 1

    def __len__(self) -> int:
        return self._count

    def columns(self) -> LoadColumns:
        held = np.flatnonzero(self._key[: self._end()] >= 0)
        order = held[np.argsort(self._key[held], kind="stable")]
        return LoadColumns(
            self._key[order],
            self._floats[0, order],
            self._floats[1, order],
            self._floats[2, order],
            self._ints[0, order],
            self._ints[1, order],
        )

    def _topic_rows(self, tid: int, partition: int) -> npt.NDArray[np.int64]:
        while tid >= len(self._rows):
            self._rows.append(np.full(0, -1, dtype=np.int64))
        rows = self._rows[tid]
        if partition >= len(rows):
            grown = np.full(max(8, 2 * len(rows), partition + 1), -1, dtype=np.int64)
            grown[: len(rows)] = rows
            rows = self._rows[tid] = grown
        return rows

    def _end(self) -> int:
        return self._count + len(self._free)

    def _grow(self) -> None:
        size = max(1024, 2 * len(self._key))
        key = np.full(size, -1, dtype=np.int64)
        key[: len(self._key)] = self._key
        floats = np.zeros((3, size))
        floats[:, : self._floats.shape[1]] = self._floats
        ints = np.zeros((2, size), dtype=np.int64)
        ints[:, : self._ints.shape[1]] = self._ints
        self._key, self._floats, self._ints = key, floats, ints


def _tp(key: bytes) -> TopicPartition | None:
    topic, _, part = key.decode(errors="replace").rpartition(":")
    return (topic, int(part)) if topic and part.isdigit() else None


class LoadFeed(LatestByKey[LoadView]):
    """The loads feed: records by ``topic:partition`` key into a ``LoadStore`` (a key that is
    not one is counted bad and skipped)."""

    def __init__(self, bootstrap: Cluster, topic: str, decode: Any) -> None:
        super().__init__(bootstrap, topic, decode)
        self._store = LoadStore()

    def columns(self) -> LoadColumns:
        with self._lock:
            return self._store.columns()

    def values(self) -> dict[bytes, LoadView]:
        raise NotImplementedError("the loads feed keeps columns: use columns()")

    def _put(self, key: bytes, value: LoadView) -> None:
        tp = _tp(key)
        if tp is None:
            self._bad += 1
            return
        self._store.put(*tp, value)

    def _remove(self, key: bytes) -> None:
        tp = _tp(key)
        if tp is not None:
            self._store.remove(*tp)

    def _count(self) -> int:
        return len(self._store)
