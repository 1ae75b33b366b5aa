"""Compact builders for planner snapshots used by the planner, gates and placement tests."""

from __future__ import annotations

import json
from typing import Any

from manager.model.decision import Decision
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import parse_snapshot

NOW = 1_700_000_000_000
HOUR = 3_600_000
GB = 1_000_000_000
MB = 1_000_000
CAPACITY = {
    "network_in_bytes_per_s": 100 * MB,
    "network_out_bytes_per_s": 100 * MB,
    "disk_bytes": 1000 * GB,
}


def broker(bid: int, rack: str | None = None, *, alive: bool = True, **kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": bid, "rack": rack, "alive": alive, "last_stats_ms": NOW - 1000}
    if not alive:
        out["dead_since_ms"] = NOW - HOUR
        out["last_stats_ms"] = NOW - HOUR
    out.update(kw)
    return out


def part(
    n: int,
    replicas: list[int],
    *,
    leader: int | str | None = "first",
    isr: list[int] | None = None,
    size: int = GB,
    bytes_in: float = 1 * MB,
    bytes_out: float = 1 * MB,
    valid: bool = True,
    alive: set[int] | None = None,
) -> dict[str, Any]:
    """A partition; by default ISR = the live replicas and the leader = first live replica."""
    live = [b for b in replicas if alive is None or b in alive]
    if isr is None:
        isr = live
    if leader == "first":
        leader = live[0] if live else None
    return {
        "partition": n,
        "replicas": replicas,
        "isr": isr,
        "leader": leader,
        "size_bytes": size,
        "load": {
            "bytes_in_per_s": bytes_in,
            "bytes_out_per_s": bytes_out,
            "messages_in_per_s": bytes_in / 1000,
            "window_valid": valid,
        },
    }


def snapshot_dict(
    brokers: list[dict[str, Any]],
    topics: dict[str, list[dict[str, Any]]],
    *,
    policy: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schema_version": 1,
        "taken_at": NOW,
        "cluster": "test",
        "default_capacity": CAPACITY,
        "brokers": brokers,
        "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
        "policy": {"max_dead_brokers": 100, "max_dead_fraction": 1.0, **(policy or {})},
        "leadership": {"holder": "m1", "epoch": 3, "current_epoch": 3, "is_leader": True},
    }
    data.update(extra)
    return data


def make(
    brokers: list[dict[str, Any]],
    topics: dict[str, list[dict[str, Any]]],
    *,
    policy: dict[str, Any] | None = None,
    **extra: Any,
) -> Snapshot:
    return parse_snapshot(json.dumps(snapshot_dict(brokers, topics, policy=policy, **extra)))


def unhealed_partitions(decision: Decision) -> set[tuple[str, int]]:
    """The partitions a partial heal names as left unhealed (each reason starts with
    ``topic:partition``; the exact search's account names none)."""
    out = set()
    for reason in decision.unhealed:
        first = reason.message.split(" ", 1)[0].rstrip(":")
        topic, sep, number = first.rpartition(":")
        if sep and number.isdigit():
            out.add((topic, int(number)))
    assert not any(
        r.message.endswith("more partitions cannot be placed") for r in decision.unhealed
    )
    return out
