"""A snapshot file's topics read straight into the partition table, no model per partition.

msgspec decodes the file's topics into light structs shaped after the pydantic models
(``Topic``, ``Partition``, ``PartitionLoad``: the same fields, the same defaults;
tests/unit/test_topics_file.py holds them to it) and strict about JSON types: a whole number
where the model wants an int, a number where it wants a float, an array where it wants a
tuple, no field it does not know. Each field is then copied as one column and checked as
one for the models' ranges.

The rule: this reader accepts only what is plainly well-formed. On anything else (msgspec
refuses a type, a number is out of range, a broker id is below 0, a leader is written as
-1) it gives up and returns None, and the caller validates the file with pydantic, whose
lax conversions and error messages stay the one definition of a valid snapshot. So whatever
is read here, pydantic accepts too and lays out as the same table. At 1.3 M replicas this
takes a quarter of pydantic's time (docs/snapshot.md, "Loading a large snapshot").
"""

from __future__ import annotations

import array
import itertools
from operator import attrgetter

import msgspec
import numpy as np
import numpy.typing as npt

from kmedic.partition_table import Loads, PartitionTable, Ragged
from manager.model.partition_models import INT32_MAX, INT64_MAX


class LoadFields(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """``PartitionLoad``'s fields."""

    bytes_in_per_s: float
    bytes_out_per_s: float
    messages_in_per_s: float
    window_valid: bool = True


class PartitionFields(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """``Partition``'s fields."""

    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int | None
    size_bytes: int
    load: LoadFields | None = None
    offline_replicas: tuple[int, ...] = ()
    eligible_leaders: tuple[int, ...] = ()


class TopicFields(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """``Topic``'s fields."""

    name: str
    partitions: tuple[PartitionFields, ...]
    min_insync_replicas: int | None = None


_DECODER = msgspec.json.Decoder(tuple[TopicFields, ...])


class _Unfit(Exception):
    """Not plainly well-formed: pydantic decides (and names what is wrong)."""


def table_from_json(topics: bytes) -> PartitionTable | None:
    """The table of a snapshot file's ``topics`` (their JSON text), or None: not plainly
    well-formed, for pydantic to validate."""
    try:
        return _table(_DECODER.decode(topics))
    except (msgspec.ValidationError, msgspec.DecodeError, _Unfit):
        return None


def _table(topics: tuple[TopicFields, ...]) -> PartitionTable:
    names = tuple(t.name for t in topics)
    if not all(names):
        raise _Unfit  # an empty name
    least = [t.min_insync_replicas for t in topics]
    _ints([x for x in least if x is not None], 1, INT32_MAX)
    min_insync = np.array([x or 0 for x in least], dtype=np.int32)  # 0: not read
    parts = list(itertools.chain.from_iterable(t.partitions for t in topics))
    n = len(parts)
    leaders = list(map(attrgetter("leader"), parts))
    offline_leaders = leaders.count(None)
    if offline_leaders:
        leaders = [-1 if leader is None else leader for leader in leaders]
    leader = _ints(leaders, -1, INT32_MAX)
    if np.count_nonzero(leader == -1) != offline_leaders:
        raise _Unfit  # a leader of -1 written as a number, not as null
    return PartitionTable(
        names=names,
        topic=np.repeat(np.arange(len(names), dtype=np.int32), [len(t.partitions) for t in topics]),
        partition=_ints(map(attrgetter("partition"), parts), 0, INT32_MAX).astype(np.int32),
        leader=leader.astype(np.int32),
        replicas=_ragged(list(map(attrgetter("replicas"), parts)), min_length=1),
        isr=_ragged(list(map(attrgetter("isr"), parts))),
        offline=_ragged(list(map(attrgetter("offline_replicas"), parts))),
        eligible=_ragged(list(map(attrgetter("eligible_leaders"), parts))),
        size=_ints(map(attrgetter("size_bytes"), parts), 0, INT64_MAX),
        loads=_loads(list(map(attrgetter("load"), parts)), n),
        min_insync=min_insync,
    )


def _ints(values: object, low: int, high: int) -> npt.NDArray[np.int64]:
    try:
        copied = array.array("q", values)  # type: ignore[call-overload]
    except OverflowError:
        raise _Unfit from None  # beyond 64 bits
    column = np.frombuffer(copied, dtype=np.int64)
    if len(column) and (column.min() < low or column.max() > high):
        raise _Unfit
    return column


def _ragged(rows: list[tuple[int, ...]], *, min_length: int = 0) -> Ragged:
    counts = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    if len(rows) and counts.min() < min_length:
        raise _Unfit
    values = _ints(itertools.chain.from_iterable(rows), 0, INT32_MAX)
    return Ragged.from_counts(counts, values.astype(np.int32))


def _floats(values: object) -> npt.NDArray[np.float64]:
    column = np.frombuffer(array.array("d", values), dtype=np.float64)  # type: ignore[call-overload]
    if not np.isfinite(column).all() or (column < 0).any():
        raise _Unfit
    return column


def _loads(loads: list[LoadFields | None], n: int) -> Loads:
    known = np.ones(n, dtype=np.bool_)
    given = loads
    if None in loads:
        known = np.fromiter((x is not None for x in loads), dtype=np.bool_, count=n)
        given = [x for x in loads if x is not None]
    out = Loads.none(n)
    columns = []
    for name, empty in (
        ("bytes_in_per_s", out.bytes_in),
        ("bytes_out_per_s", out.bytes_out),
        ("messages_in_per_s", out.messages_in),
    ):
        column = empty.copy()
        column[known] = _floats(map(attrgetter(name), given))
        columns.append(column)
    valid = np.ones(n, dtype=np.bool_)
    valid[known] = np.fromiter(map(attrgetter("window_valid"), given), np.bool_, len(given))
    return Loads(columns[0], columns[1], columns[2], valid)
