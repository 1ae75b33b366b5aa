"""A decoder for one Kafka answer, Metadata (versions 0-13), straight into a partition table.

kafka-python's generated decoder reads an answer field by field and builds an object per
broker, topic and partition: at 433,000 partitions that is 3 M struct calls and 2 s of a
cycle (docs/bench.md, "cycle"). This one reads the brokers and topics field by field (there
are few) and a topic's partitions in runs: partitions of the same shape (replica, ISR and
offline counts) are laid out at a fixed stride, so a run is found by comparing the count
fields of every partition at once, and the columns of all runs of a shape are gathered in
bulk at the end. A partition that starts no run (a shrunk ISR, offline replicas, tagged
fields, a count past one varint byte) is read field by field. Property tests check it
against kafka-python's own decoding of every version (tests/unit/test_metadata_wire.py).

The wire format (Kafka's MetadataResponse.json): versions 9+ are flexible (compact arrays
and strings, whose lengths are unsigned varints of length + 1, and tagged fields).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from kmedic.partition_table import PartitionTable, Ragged

MAX_VERSION = 13

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">hii")  # error code, partition index, leader


class MetadataDecodeError(ValueError):
    """The bytes are not a Metadata answer of the version they were read as."""


@dataclass(frozen=True)
class MetadataBroker:
    node_id: int
    host: str
    port: int
    rack: str | None


@dataclass(frozen=True)
class MetadataAnswer:
    brokers: tuple[MetadataBroker, ...]
    cluster_id: str | None
    controller_id: int
    topic_errors: dict[str, int]  # the topics Kafka answered with an error code
    table: PartitionTable


class _Reader:
    """A cursor over the answer for everything but the partitions' bulk."""

    def __init__(self, buf: bytes, flexible: bool) -> None:
        self.buf = buf
        self.pos = 0
        self.flexible = flexible

    def i16(self) -> int:
        (value,) = _I16.unpack_from(self.buf, self.pos)
        self.pos += 2
        return int(value)

    def i32(self) -> int:
        (value,) = _I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return int(value)

    def skip(self, n: int) -> None:
        if self.pos + n > len(self.buf):
            raise MetadataDecodeError(f"the answer ends at byte {len(self.buf)}, inside a field")
        self.pos += n

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            if self.pos >= len(self.buf):
                raise MetadataDecodeError("the answer ends inside a varint")
            byte = self.buf[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 35:
                raise MetadataDecodeError("a varint longer than 5 bytes")

    def length(self) -> int:
        """An array's or string's length; -1: null."""
        if self.flexible:
            return self.uvarint() - 1
        return self.i32()

    def string(self) -> str | None:
        n = self.uvarint() - 1 if self.flexible else self.i16()
        if n < 0:
            return None
        start = self.pos
        self.skip(n)
        return self.buf[start : self.pos].decode("utf-8")

    def tags(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint()):
            self.uvarint()  # the tag
            self.skip(self.uvarint())

    def int32s(self) -> tuple[int, ...]:
        n = self.length()
        if n <= 0:
            return ()
        start = self.pos
        self.skip(4 * n)
        return struct.unpack_from(f">{n}i", self.buf, start)


@dataclass
class _Shape:
    """A partition layout with single-byte (flexible) or int32 counts: where its count fields
    sit and what they hold, so that a run of partitions of this shape can be checked at once."""

    replicas: int
    isr: int
    offline: int
    length: int
    count_at: tuple[int, ...]  # offsets of the count fields' bytes
    count_bytes: npt.NDArray[np.uint8]  # and their values
    replicas_at: int  # offset of the first replica id
    isr_at: int
    offline_at: int
    runs: list[tuple[int, int, int]] = field(default_factory=list)  # (pos, partitions, row)

    def fields(self) -> tuple[tuple[int, int], ...]:
        """(count, offset of the first id) of the replicas, the ISR and the offline replicas."""
        return (
            (self.replicas, self.replicas_at),
            (self.isr, self.isr_at),
            (self.offline, self.offline_at),
        )


class _Single(NamedTuple):
    """A partition read field by field."""

    row: int
    number: int
    leader: int
    ids: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]  # replicas, ISR, offline


def _shape(version: int, replicas: int, isr: int, offline: int) -> _Shape:
    flexible = version >= 9
    width = 1 if flexible else 4
    at = 10 + (4 if version >= 7 else 0)  # error, index, leader[, leader epoch]
    counts = [(at, replicas)]
    replicas_at = at + width
    isr_count_at = replicas_at + 4 * replicas
    counts.append((isr_count_at, isr))
    isr_at = isr_count_at + width
    end = isr_at + 4 * isr
    offline_at = end
    if version >= 5:
        counts.append((end, offline))
        offline_at = end + width
        end = offline_at + 4 * offline
    count_at: list[int] = []
    count_bytes: list[int] = []
    for offset, n in counts:
        encoded = bytes([n + 1]) if flexible else _I32.pack(n)
        count_at.extend(range(offset, offset + width))
        count_bytes.extend(encoded)
    if flexible:  # no tagged fields
        count_at.append(end)
        count_bytes.append(0)
        end += 1
    return _Shape(
        replicas,
        isr,
        offline,
        end,
        tuple(count_at),
        np.array(count_bytes, dtype=np.uint8),
        replicas_at,
        isr_at,
        offline_at,
    )


class _Partitions:
    """The partitions read so far: runs by shape, and the rest one by one."""

    def __init__(self, buf: bytes, version: int) -> None:
        self.buf = buf
        self.bytes = np.frombuffer(buf, dtype=np.uint8)
        self.version = version
        self.rows = 0
        self.shapes: dict[tuple[int, int, int], _Shape] = {}
        self.single: list[_Single] = []  # partitions read one by one
        self.last: _Shape | None = None  # the shape of the last run (a topic's may follow)

    def read(self, reader: _Reader, count: int) -> None:
        """``count`` partitions of one topic, from the reader's position. After a partition
        read one by one, a run of its shape is tried, and if none follows, a run of the shape
        of the last run (one odd partition, an ISR one short, does not end a topic's run).
        Where runs keep failing, partitions are read one by one for a while: a run that fails
        costs about as much as a partition read alone."""
        cool = 0  # partitions to read one by one before trying a run again
        failed = 0  # runs tried in a row that read fewer than two partitions
        last = self.last
        done = self._take_run(reader, last, count) if last is not None else 0
        while done < count:
            shape = self._one(reader)
            done += 1
            if shape is None or done == count:
                continue
            if cool:
                cool -= 1
                continue
            run = self._take_run(reader, shape, count - done)
            if run == 0 and last is not None and last is not shape:
                run = self._take_run(reader, last, count - done)
            done += run
            last = self.last
            failed = failed + 1 if run < 2 else 0
            if failed >= 2:
                cool = 8  # irregular here: a run costs more than it saves

    def _take_run(self, reader: _Reader, shape: _Shape, most: int) -> int:
        """The run of ``shape`` at the reader's position (at most ``most`` partitions),
        taken: how many partitions it holds."""
        run = self._run(reader.pos, shape, most)
        if run:
            shape.runs.append((reader.pos, run, self.rows))
            self.rows += run
            reader.pos += run * shape.length
            self.last = shape
        return run

    def _one(self, reader: _Reader) -> _Shape | None:
        """One partition, field by field; its shape if a run of its like may follow."""
        start = reader.pos
        if start + 10 > len(self.buf):
            raise MetadataDecodeError("the answer ends inside a partition")
        _, index, leader = _HEAD.unpack_from(self.buf, start)
        reader.pos += 10
        if self.version >= 7:
            reader.skip(4)  # leader epoch
        replicas = reader.int32s()
        isr = reader.int32s()
        offline = reader.int32s() if self.version >= 5 else ()
        tagged_at = reader.pos
        reader.tags()
        self.single.append(_Single(self.rows, index, leader, (replicas, isr, offline)))
        self.rows += 1
        n, m, k = len(replicas), len(isr), len(offline)
        if self.version >= 9 and (max(n, m, k) >= 127 or reader.pos != tagged_at + 1):
            return None  # multi-byte counts or tagged fields: no fixed stride
        key = (n, m, k)
        shape = self.shapes.get(key)
        if shape is None:
            shape = self.shapes[key] = _shape(self.version, n, m, k)
        if shape.length != reader.pos - start:
            return None  # null arrays (-1) read as empty: not this shape's bytes
        return shape

    def _run(self, pos: int, shape: _Shape, most: int) -> int:
        """How many partitions from ``pos`` have ``shape``'s count fields (at most ``most``)."""
        most = min(most, (len(self.buf) - pos) // shape.length)
        if most <= 0:
            return 0
        block = self.bytes[pos : pos + most * shape.length].reshape(most, shape.length)
        same = (block[:, shape.count_at] == shape.count_bytes).all(axis=1)
        first = int(same.argmin())  # the first that differs, or 0 when none does
        return first if not same[first] else most

    def table(self, names: tuple[str, ...], topic_rows: list[int]) -> PartitionTable:
        rows = self.rows
        partition = np.empty(rows, dtype=np.int32)
        leader = np.empty(rows, dtype=np.int32)
        counts = np.empty((3, rows), dtype=np.int64)  # replicas, ISR, offline
        gathered = []
        for shape in self.shapes.values():
            if not shape.runs:
                continue
            starts = np.concatenate(
                [np.arange(p, p + n * shape.length, shape.length) for p, n, _ in shape.runs]
            )
            at = np.concatenate([np.arange(r, r + n) for _, n, r in shape.runs])
            partition[at] = self._int32s(starts + 2, 1)[:, 0]
            leader[at] = self._int32s(starts + 6, 1)[:, 0]
            counts[:, at] = np.array([[n] for n, _ in shape.fields()])
            gathered.append((shape, starts, at))
        single = self.single
        if single:
            at = np.fromiter((s.row for s in single), dtype=np.int64, count=len(single))
            partition[at] = [s.number for s in single]
            leader[at] = [s.leader for s in single]
            for c in range(3):
                counts[c, at] = [len(s.ids[c]) for s in single]
        columns = []
        for c in range(3):
            start = np.zeros(rows + 1, dtype=np.int64)
            np.cumsum(counts[c], out=start[1:])
            values = np.empty(int(start[-1]), dtype=np.int32)
            for shape, starts, at in gathered:
                n, offset = shape.fields()[c]
                if n:
                    dest = start[at][:, None] + np.arange(n)
                    values[dest] = self._int32s(starts + offset, n)
            for s in single:
                if s.ids[c]:
                    values[start[s.row] : start[s.row] + len(s.ids[c])] = s.ids[c]
            columns.append(Ragged(start, values))
        replicas, isr, offline = columns
        topic = np.repeat(np.arange(len(names), dtype=np.int32), topic_rows)
        return PartitionTable(names, topic, partition, leader, replicas, isr, offline)

    def _int32s(self, starts: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.int32]:
        """``n`` big-endian int32s from each of ``starts``, as rows."""
        index = starts[:, None] + np.arange(4 * n)
        raw = np.ascontiguousarray(self.bytes[index])
        return raw.view(">i4").reshape(len(starts), n).astype(np.int32)


def decode_metadata(buf: bytes, version: int) -> MetadataAnswer:
    """A Metadata answer's body (after the response header) of ``version``."""
    if not 0 <= version <= MAX_VERSION:
        raise MetadataDecodeError(f"Metadata version {version} is not one of 0-{MAX_VERSION}")
    try:
        return _decode(buf, version)
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise MetadataDecodeError(f"a malformed Metadata v{version} answer: {exc}") from exc


def _decode(buf: bytes, version: int) -> MetadataAnswer:
    reader = _Reader(buf, flexible=version >= 9)
    if version >= 3:
        reader.i32()  # throttle time
    brokers = []
    for _ in range(max(reader.length(), 0)):
        node_id = reader.i32()
        host = reader.string() or ""
        port = reader.i32()
        rack = reader.string() if version >= 1 else None
        reader.tags()
        brokers.append(MetadataBroker(node_id, host, port, rack))
    cluster_id = reader.string() if version >= 2 else None
    controller_id = reader.i32() if version >= 1 else -1
    names: list[str] = []
    topic_rows: list[int] = []
    errors: dict[str, int] = {}
    partitions = _Partitions(buf, version)
    for _ in range(max(reader.length(), 0)):
        error = reader.i16()
        name = reader.string() or ""
        if version >= 10:
            reader.skip(16)  # topic id
        if version >= 1:
            reader.skip(1)  # is internal
        before = partitions.rows
        partitions.read(reader, max(reader.length(), 0))
        if version >= 8:
            reader.i32()  # topic authorized operations
        reader.tags()
        names.append(name)
        topic_rows.append(partitions.rows - before)
        if error:
            errors[name] = error
    if 8 <= version <= 10:
        reader.i32()  # cluster authorized operations
    if version >= 13:
        reader.i16()  # top-level error code
    reader.tags()
    if reader.pos != len(buf):
        raise MetadataDecodeError(
            f"{len(buf) - reader.pos} bytes left after a Metadata v{version} answer"
        )
    return MetadataAnswer(
        tuple(brokers),
        cluster_id,
        controller_id,
        errors,
        partitions.table(tuple(names), topic_rows),
    )
