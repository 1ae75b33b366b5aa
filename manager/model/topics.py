"""The snapshot's topics: a table of columns, which the cycle reads, and the ``Topic`` models,
built from it only where a model is wanted (the snapshot file, the status page, a test).

The monitor fills the table straight from the Metadata answer and the feeds (no model per
partition on the cycle's path); a snapshot file's topics are validated as models, then laid
out as a table the same way. Either way ``Snapshot.topics`` is a sequence of ``Topic`` and
``Snapshot.topics.table`` its columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from kmedic.partition_table import Loads

# The analyzer reads the partition columns through the model and never imports the shared
# core (the import contract): these are the table's addresses for it.
from kmedic.partition_table import PartitionTable as PartitionTable
from kmedic.partition_table import Ragged as Ragged
from manager.model.partition_models import Partition, PartitionLoad, Topic


@dataclass(frozen=True)
class Derived:
    """A table that is ``base`` but for the ISR, leader and offline replicas of ``rows`` (a
    loss the readiness sweep simulates): its readers may reuse what they built of the base."""

    base: PartitionTable
    rows: tuple[int, ...]


class Topics(Sequence[Topic]):
    __slots__ = ("_models", "derived", "table")

    def __init__(
        self,
        table: PartitionTable,
        models: tuple[Topic, ...] | None = None,
        *,
        derived: Derived | None = None,
    ) -> None:
        self.table = table
        self._models = models
        self.derived = derived

    @classmethod
    def of(cls, topics: Iterable[Topic]) -> Topics:
        """The topics of a snapshot file (or a test), laid out as a table."""
        models = tuple(topics)
        return cls(table_of(models), models)

    def models(self) -> tuple[Topic, ...]:
        if self._models is None:
            self._models = models_of(self.table)
        return self._models

    def __len__(self) -> int:
        return len(self.table.names)

    @overload
    def __getitem__(self, i: int) -> Topic: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Topic]: ...
    def __getitem__(self, i: int | slice) -> Topic | Sequence[Topic]:
        return self.models()[i]

    def __iter__(self) -> Iterator[Topic]:
        return iter(self.models())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Topics):
            return self is other or self.models() == other.models()
        if isinstance(other, tuple | list):
            return self.models() == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.models())

    def __repr__(self) -> str:
        return f"Topics({len(self)} topics, {len(self.table)} partitions)"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        models = handler.generate_schema(tuple[Topic, ...])
        from_models = core_schema.no_info_after_validator_function(cls.of, models)
        return core_schema.json_or_python_schema(
            json_schema=from_models,
            python_schema=core_schema.union_schema(
                [core_schema.is_instance_schema(cls), from_models]
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda topics: topics.models(), return_schema=models
            ),
        )


def topics_table(topics: Sequence[Topic]) -> PartitionTable:
    """The columns of a snapshot's topics (a ``Topics``; laid out here when a copy of a
    snapshot was given plain models)."""
    return topics.table if isinstance(topics, Topics) else table_of(topics)


def table_of(topics: Sequence[Topic]) -> PartitionTable:
    """The columns of ``topics``, in their order."""
    parts = [(i, p) for i, t in enumerate(topics) for p in t.partitions]
    n = len(parts)
    loads = [p.load for _, p in parts]
    nan = float("nan")
    return PartitionTable(
        names=tuple(t.name for t in topics),
        topic=np.fromiter((i for i, _ in parts), dtype=np.int32, count=n),
        partition=np.fromiter((p.partition for _, p in parts), dtype=np.int32, count=n),
        leader=np.fromiter(
            (-1 if p.leader is None else p.leader for _, p in parts), dtype=np.int32, count=n
        ),
        replicas=Ragged.of([p.replicas for _, p in parts]),
        isr=Ragged.of([p.isr for _, p in parts]),
        offline=Ragged.of([p.offline_replicas for _, p in parts]),
        eligible=Ragged.of([p.eligible_leaders for _, p in parts]),
        size=np.fromiter((p.size_bytes for _, p in parts), dtype=np.int64, count=n),
        loads=Loads(
            np.fromiter((nan if x is None else x.bytes_in_per_s for x in loads), np.float64, n),
            np.fromiter((nan if x is None else x.bytes_out_per_s for x in loads), np.float64, n),
            np.fromiter((nan if x is None else x.messages_in_per_s for x in loads), np.float64, n),
            np.fromiter((x is None or x.window_valid for x in loads), np.bool_, n),
        ),
        min_insync=np.fromiter(
            (t.min_insync_replicas or 0 for t in topics), dtype=np.int32, count=len(topics)
        ),
    )


def models_of(table: PartitionTable) -> tuple[Topic, ...]:
    """The ``Topic`` models of a table sorted by topic (validated: they are the edges')."""
    n = len(table)
    size = table.size.tolist() if table.size is not None else [0] * n
    loads = table.loads or Loads.none(n)
    known = loads.known.tolist()
    bytes_in, bytes_out = loads.bytes_in.tolist(), loads.bytes_out.tolist()
    messages_in, valid = loads.messages_in.tolist(), loads.valid.tolist()
    eligible = table.eligible.rows() if table.eligible is not None else [()] * n
    replicas, isr, offline = table.replicas.rows(), table.isr.rows(), table.offline.rows()
    numbers, leaders = table.partition.tolist(), table.leader.tolist()
    min_insync = table.min_insync.tolist() if table.min_insync is not None else None
    bounds = table.topic_bounds().tolist()
    out = []
    for t, name in enumerate(table.names):
        out.append(
            Topic(
                name=name,
                partitions=tuple(
                    Partition(
                        partition=numbers[i],
                        replicas=replicas[i],
                        isr=isr[i],
                        leader=None if leaders[i] < 0 else leaders[i],
                        size_bytes=size[i],
                        load=PartitionLoad(
                            bytes_in_per_s=bytes_in[i],
                            bytes_out_per_s=bytes_out[i],
                            messages_in_per_s=messages_in[i],
                            window_valid=valid[i],
                        )
                        if known[i]
                        else None,
                        offline_replicas=offline[i],
                        eligible_leaders=eligible[i],
                    )
                    for i in range(bounds[t], bounds[t + 1])
                ),
                min_insync_replicas=(min_insync[t] or None) if min_insync is not None else None,
            )
        )
    return tuple(out)
