"""The in-flight plan as stored in ZooKeeper (pure): built from a decision, trimmed as moves
finish, read back by a new leader. The I/O (fenced
compare-and-set) is manager.coordination.leadership's.

Document: ``{"decision", "kind", "epoch", "moves": [{"topic", "partition", "target",
"size_bytes"}], "moves_started": [...], "throttles": {...}}``: ``moves_started`` is the hourly
move budget's history (manager.coordination.move_budget), ``throttles`` the replication
throttles kmedic set and owns (manager.model.throttles).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from manager.coordination.move_budget import FIELD as HISTORY_FIELD
from manager.coordination.move_budget import Entry, to_field
from manager.model.decision import Decision, ElectPreferredLeader, Reassign
from manager.model.moves import Move
from manager.model.snapshot import Snapshot
from manager.model.throttles import FIELD as THROTTLES_FIELD
from manager.model.throttles import ThrottleRecord

TopicPartition = tuple[str, int]


def moves_for(decision: Decision, snap: Snapshot) -> list[Move]:
    """One executor move per partition the decision touches, in the decision's order."""
    sizes = {
        (t.name, p.partition): (p.size_bytes, p.replicas) for t in snap.topics for p in t.partitions
    }
    moves: dict[TopicPartition, Move] = {}
    for action in decision.actions:
        tp = (action.topic, action.partition)
        if isinstance(action, Reassign):
            size = sizes.get(tp, (0, ()))[0]
            moves[tp] = Move(action.topic, action.partition, action.replicas_to, size)
        elif isinstance(action, ElectPreferredLeader) and tp not in moves:
            # A leadership move alone: a reassignment to the same replicas moves no data,
            # and the executor's preferred election follows it.
            replicas = sizes.get(tp, (0, ()))[1]
            moves[tp] = Move(action.topic, action.partition, tuple(replicas), 0)
    return list(moves.values())


def plan_document(
    decision: Decision,
    moves: Iterable[Move],
    epoch: int,
    history: Iterable[Entry],
    throttles: ThrottleRecord,
) -> dict[str, Any]:
    return {
        "decision": decision.summary,
        "kind": decision.kind,
        "epoch": epoch,
        "moves": [
            {
                "topic": m.topic,
                "partition": m.partition,
                "target": list(m.target),
                "size_bytes": m.size_bytes,
            }
            for m in moves
        ],
        HISTORY_FIELD: to_field(history),
        THROTTLES_FIELD: throttles.to_field(),
    }


def _tp(entry: Mapping[str, Any]) -> TopicPartition:
    return (str(entry["topic"]), int(entry["partition"]))


def synced(
    plan: Mapping[str, Any], active: set[TopicPartition], throttles: ThrottleRecord
) -> dict[str, Any] | None:
    """The plan with only the moves still active and the throttles kmedic owns now, or None
    when nothing changed. Emptied, not deleted, when all are done: the move history it carries
    must outlive it."""
    moves = list(plan.get("moves") or [])
    kept = [m for m in moves if _tp(m) in active]
    owned = throttles.to_field()
    if len(kept) == len(moves) and stored_throttles(plan).to_field() == owned:
        return None
    return {**plan, "moves": kept, THROTTLES_FIELD: owned}


def with_throttles(plan: Mapping[str, Any], throttles: ThrottleRecord) -> dict[str, Any]:
    return {**plan, THROTTLES_FIELD: throttles.to_field()}


def stored_throttles(plan: Mapping[str, Any] | None) -> ThrottleRecord:
    """The throttles a stored plan says kmedic owns (none, for a plan written before kmedic
    recorded them: what is not recorded is never removed)."""
    return ThrottleRecord.from_field((plan or {}).get(THROTTLES_FIELD))


def moves_to_adopt(plan: Mapping[str, Any], known: set[TopicPartition]) -> list[Move]:
    """The stored plan's moves this instance does not run yet."""
    return [
        Move(str(m["topic"]), int(m["partition"]), tuple(m["target"]), int(m.get("size_bytes", 0)))
        for m in plan.get("moves") or []
        if _tp(m) not in known
    ]


def own_partitions(plan: Mapping[str, Any] | None) -> frozenset[TopicPartition]:
    """Partitions the stored plan moves: under-replication there is kmedic's own doing."""
    return frozenset(_tp(m) for m in (plan or {}).get("moves") or [])
