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


def parse_log_dirs(result: list[dict[str, Any]], broker_id: int) -> list[LogDirInfo] | None:
    for entry in result:
        if int(entry.get("broker", -1)) != broker_id:
            continue
        dirs = []
        for d in entry.get("log_dirs", []):
            replica_bytes = sum(
                int(p["partition_size"])
                for t in d.get("topics", [])
                for p in t.get("partitions", [])
                if not p.get("is_future_key", False)
            )
            total, usable = d.get("total_bytes"), d.get("usable_bytes")
            dirs.append(
                LogDirInfo(
                    path=str(d["log_dir"]),
                    # -1 means the broker does not know (older protocol versions).
                    total_bytes=int(total) if total is not None and total >= 0 else None,
                    usable_bytes=int(usable) if usable is not None and usable >= 0 else None,
                    replica_bytes=replica_bytes,
                    error_code=int(d.get("error_code", 0)),
                )
            )
        return dirs
    return None


def parse_reassignments(result: dict[Any, dict[str, Any]]) -> dict[TopicPartition, Reassignment]:
    return {
        (str(tp.topic), int(tp.partition)): Reassignment(
            replicas=tuple(r.get("replicas", [])),
            adding=tuple(r.get("adding_replicas", [])),
            removing=tuple(r.get("removing_replicas", [])),
        )
        for tp, r in result.items()
    }
