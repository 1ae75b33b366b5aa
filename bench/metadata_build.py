"""The fake Admin port's Metadata answer built per request as a broker builds it: from the
cluster's partitions as they are at that request, every partition's entry encoded anew.

kafka-python's message classes build the 433,000-partition answer in 1.3 s of CPU (2.7 s on a
shared core: docs/bench.md, "the real manager at fleet scale"), an object per partition; a
broker's Java writes the same bytes from its metadata image in a fraction of that. This builder
writes the partitions' entries as columns (numpy: every entry of a shape at once), the brokers'
and topics' few fields one by one, in Kafka's flexible wire format (Metadata versions 9-13:
compact arrays and strings, tagged fields). ``tests/unit/test_bench_metadata_build.py`` checks
it byte for byte against kafka-python's encoding of the same answer.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FIRST_VERSION = 9  # the first flexible version; older ones are left to kafka-python
LAST_VERSION = 13
NO_OPERATIONS = -(2**31)  # authorized operations not asked for


def varint(n: int) -> bytes:
    """An unsigned varint."""
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def compact_string(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    raw = text.encode()
    return varint(len(raw) + 1) + raw


@dataclass(frozen=True)
class BrokerEntry:
    node_id: int
    host: str
    port: int
    rack: str | None


class PartitionColumns:
    """Every partition's entry, grouped by topic in ``names`` order (``starts[t]``: the first
    row of topic ``t``); replicas and ISR padded with -1 to the widest."""

    def __init__(
        self,
        names: Sequence[str],
        starts: npt.NDArray[np.int64],
        index: npt.NDArray[np.int32],
        leader: npt.NDArray[np.int32],
        replicas: npt.NDArray[np.int32],
        isr: npt.NDArray[np.int32],
    ) -> None:
        self.names = list(names)
        self.starts = starts
        self.index, self.leader, self.replicas, self.isr = index, leader, replicas, isr
        self.replica_count = (replicas >= 0).sum(axis=1)
        self.isr_count = (isr >= 0).sum(axis=1)

    def __len__(self) -> int:
        return len(self.index)


def _put_i32(buf: npt.NDArray[np.uint8], at: npt.NDArray[np.int64], values: npt.ArrayLike) -> None:
    raw = np.asarray(values, dtype=">i4").view(np.uint8).reshape(-1, 4)
    buf[at[:, None] + np.arange(4)] = raw


def _entries(parts: PartitionColumns, epochs: npt.NDArray[np.int32]) -> tuple[bytes, list[int]]:
    """Every partition's entry, one after another, and where each topic's begin."""
    n, m = parts.replica_count, parts.isr_count
    if max(n.max(initial=0), m.max(initial=0)) >= 127:
        raise ValueError("a replica list too long for one varint byte")
    # error(2) index(4) leader(4) epoch(4), replicas(1+4n), isr(1+4m), offline(1), tags(1)
    size = 14 + 1 + 4 * n + 1 + 4 * m + 1 + 1
    at = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(size, out=at[1:])
    buf = np.zeros(int(at[-1]), dtype=np.uint8)
    start = at[:-1]
    _put_i32(buf, start + 2, parts.index)
    _put_i32(buf, start + 6, parts.leader)
    _put_i32(buf, start + 10, epochs)
    buf[start + 14] = n + 1
    for j in range(parts.replicas.shape[1]):
        has = n > j
        _put_i32(buf, start[has] + 15 + 4 * j, parts.replicas[has, j])
    isr_at = start + 15 + 4 * n
    buf[isr_at] = m + 1
    for j in range(parts.isr.shape[1]):
        has = m > j
        _put_i32(buf, isr_at[has] + 1 + 4 * j, parts.isr[has, j])
    buf[isr_at + 1 + 4 * m] = 1  # no offline replicas (an empty compact array)
    topic_at = at[np.append(parts.starts, len(parts))].tolist()
    return buf.tobytes(), topic_at


def metadata_body(
    version: int,
    brokers: Sequence[BrokerEntry],
    cluster_id: str,
    controller_id: int,
    parts: PartitionColumns,
    epochs: npt.NDArray[np.int32],
    asked: frozenset[str] | None,
) -> bytes:
    """The answer's body (after the response header) at ``version`` (9-13)."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        raise ValueError(f"Metadata v{version} is not built here")
    out = [struct.pack(">i", 0), varint(len(brokers) + 1)]  # throttle time, brokers
    for b in brokers:
        out += [
            struct.pack(">i", b.node_id),
            compact_string(b.host),
            struct.pack(">i", b.port),
            compact_string(b.rack),
            b"\x00",
        ]
    out += [compact_string(cluster_id), struct.pack(">i", controller_id)]
    entries, topic_at = _entries(parts, epochs)
    wanted = [t for t, name in enumerate(parts.names) if asked is None or name in asked]
    out.append(varint(len(wanted) + 1))
    for t in wanted:
        count = int(parts.starts[t + 1] if t + 1 < len(parts.starts) else len(parts))
        count -= int(parts.starts[t])
        out += [
            b"\x00\x00",  # error code
            compact_string(parts.names[t]),
            b"\x00" * 16 if version >= 10 else b"",  # topic id: none known
            b"\x00",  # not internal
            varint(count + 1),
            entries[topic_at[t] : topic_at[t + 1]],
            struct.pack(">i", NO_OPERATIONS),
            b"\x00",
        ]
    if version <= 10:
        out.append(struct.pack(">i", NO_OPERATIONS))  # the cluster's authorized operations
    if version >= 13:
        out.append(b"\x00\x00")  # error code
    out.append(b"\x00")
    return b"".join(out)
