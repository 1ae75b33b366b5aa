"""Admin API answers as typed records: broker registrations, partitions with their replicas
and ISR, running reassignments, log directories. Pure parsing of kafka-python's answers (its
dicts; the Metadata answer, the largest, is decoded by kmedic.metadata_wire), shared by the
agent and the manager; the I/O stays with them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    # Replicas the broker cannot serve: their broker lost the log directory holding them.
    offline: tuple[int, ...] = ()


@dataclass(frozen=True)
class Reassignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True)
class LogDirInfo:
    path: str
    total_bytes: int | None
    usable_bytes: int | None
    replica_bytes: int
    error_code: int
    cordoned: bool = False  # KIP-1066 (DescribeLogDirs v5+); False from older brokers


@dataclass(frozen=True)
class BrokerNode:
    host: str
    port: int
    rack: str | None
    fenced: bool


def parse_nodes(cluster: dict[str, Any]) -> dict[int, BrokerNode]:
    return {
        int(b["broker_id"]): BrokerNode(
            host=str(b["host"]),
            port=int(b["port"]),
            rack=b.get("rack") or None,
            fenced=bool(b.get("is_fenced", False)),
        )
        for b in cluster.get("brokers", [])
    }


def log_dir_of(result: Any) -> LogDirInfo:
    """One log directory of a DescribeLogDirs answer (kafka-python's result object): its
    replicas' bytes, a future replica (one moving between directories) not counted."""
    replica_bytes = sum(
        int(p.partition_size) for t in result.topics for p in t.partitions if not p.is_future_key
    )
    # Absent before version 4, and -1 when the broker does not know.
    total, usable = getattr(result, "total_bytes", None), getattr(result, "usable_bytes", None)
    return LogDirInfo(
        path=str(result.log_dir),
        total_bytes=int(total) if total is not None and total >= 0 else None,
        usable_bytes=int(usable) if usable is not None and usable >= 0 else None,
        replica_bytes=replica_bytes,
        error_code=int(result.error_code),
        cordoned=bool(getattr(result, "is_cordoned", False)),
    )


def parse_reassignments(result: dict[Any, dict[str, Any]]) -> dict[TopicPartition, Reassignment]:
    return {
        (str(tp.topic), int(tp.partition)): Reassignment(
            replicas=tuple(r.get("replicas", [])),
            adding=tuple(r.get("adding_replicas", [])),
            removing=tuple(r.get("removing_replicas", [])),
        )
        for tp, r in result.items()
    }
