"""The in-flight plan as stored in ZooKeeper (pure): built from a decision, trimmed as moves
finish, read back by a new leader. The I/O (fenced compare-and-set) is
manager.coordination.plan_store's.

The JSON document: ``{"decision", "kind", "epoch", "moves": [{"topic", "partition", "target",
"size_bytes", "progress"}], "moves_started": [...], "throttles": {...}}``. ``moves_started`` is
the hourly move budget's history (manager.coordination.move_budget), ``throttles`` the replication
throttles kmedic set and owns (manager.throttling.ownership). Read back, it is validated: a move
that does not name its partition and target is a corrupt plan, an error that names the field.
The history and the throttle record are read leniently, as their modules say why. A move's
``progress`` is the progress watchdog's record (manager.model.move_progress), so that a new
leader keeps its clock; read leniently too: a malformed one restarts the clock, nothing more.
``plan_progress`` (``{"copied_bytes", "total_bytes", ..., "at"}``) is where the whole plan
stood when last written (manager.model.plan_progress), for `kmedic status` and `kmedic
requests list`; a malformed one is not shown, and an emptied plan carries none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kmedic.errors import KmedicError
from manager.coordination.move_budget import FIELD as HISTORY_FIELD
from manager.coordination.move_budget import Entry, from_field, to_field
from manager.model.decision import Decision, PlanKind
from manager.model.move_progress import FIELD, MoveProgress
from manager.model.moves import Move, TopicPartition
from manager.model.plan_progress import FIELD as PROGRESS_FIELD
from manager.model.plan_progress import PlanProgress
from manager.throttling.ownership import FIELD as THROTTLES_FIELD
from manager.throttling.ownership import ThrottleRecord


class PlannedMove(BaseModel):
    """One move of the stored plan: a partition and the replica list it goes to."""

    model_config = ConfigDict(frozen=True)

    topic: str = Field(min_length=1)
    partition: int = Field(ge=0)
    target: tuple[int, ...] = Field(min_length=1)
    size_bytes: int = Field(default=0, ge=0)
    progress: MoveProgress | None = None

    @field_validator("progress", mode="before")
    @classmethod
    def _progress(cls, raw: Any) -> MoveProgress | None:
        if raw is None or isinstance(raw, MoveProgress):
            return raw
        try:
            return MoveProgress.from_field(raw)
        except KmedicError:
            return None

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    def as_move(self) -> Move:
        return Move(self.topic, self.partition, self.target, self.size_bytes)


class PlanDocument(BaseModel):
    """The stored plan. Emptied, never deleted, when its moves are done: the move history
    it carries must outlive it."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    decision: str = ""
    kind: PlanKind | None = None
    epoch: int = Field(default=0, ge=0)
    moves: tuple[PlannedMove, ...] = ()
    moves_started: tuple[Entry, ...] = ()
    throttles: ThrottleRecord = ThrottleRecord()
    progress: PlanProgress | None = None  # the whole plan's figures, as of ``progress_at``
    progress_at: float = 0.0  # wall-clock seconds

    @model_validator(mode="before")
    @classmethod
    def _stored_progress(cls, raw: Any) -> Any:
        if not isinstance(raw, dict) or PROGRESS_FIELD not in raw:
            return raw
        raw = dict(raw)
        stored = raw.pop(PROGRESS_FIELD)
        at = stored.get("at") if isinstance(stored, dict) else None
        if not isinstance(at, int | float) or isinstance(at, bool):
            return {**raw, "progress": None, "progress_at": 0.0}
        return {**raw, "progress": stored, "progress_at": float(at)}

    @field_validator("moves_started", mode="before")
    @classmethod
    def _history(cls, raw: Any) -> tuple[Entry, ...]:
        return tuple(from_field(raw))

    @field_validator("throttles", mode="before")
    @classmethod
    def _throttles(cls, raw: Any) -> ThrottleRecord:
        return raw if isinstance(raw, ThrottleRecord) else ThrottleRecord.from_field(raw)

    @field_validator("progress", mode="before")
    @classmethod
    def _progress(cls, raw: Any) -> PlanProgress | None:
        if raw is None or isinstance(raw, PlanProgress):
            return raw
        try:
            return PlanProgress.from_field(raw)
        except KmedicError:
            return None  # only shown to operators: a malformed one is not shown

    def to_json(self) -> dict[str, Any]:
        """The JSON document as stored."""
        progress = (
            {PROGRESS_FIELD: {**self.progress.to_field(), "at": self.progress_at}}
            if self.progress is not None
            else {}
        )
        return {
            "decision": self.decision,
            "kind": self.kind,
            "epoch": self.epoch,
            "moves": [
                {
                    "topic": m.topic,
                    "partition": m.partition,
                    "target": list(m.target),
                    "size_bytes": m.size_bytes,
                    **({FIELD: m.progress.to_field()} if m.progress is not None else {}),
                }
                for m in self.moves
            ],
            HISTORY_FIELD: to_field(self.moves_started),
            THROTTLES_FIELD: self.throttles.to_field(),
            **progress,
        }


def moves_for(decision: Decision) -> list[Move]:
    """One executor move per partition the decision touches, in the decision's order, each
    with what its action carries from the plan (its size, an election's replicas)."""
    moves: dict[TopicPartition, Move] = {}
    for action in decision.actions:
        tp = (action.topic, action.partition)
        if isinstance(action, Move):
            moves[tp] = action
        elif tp not in moves:
            # A leadership move alone: a reassignment to the same replicas moves no data,
            # and the executor's preferred election follows it.
            moves[tp] = Move(action.topic, action.partition, action.replicas, 0)
    return list(moves.values())


def plan_document(
    decision: Decision,
    moves: Iterable[Move],
    epoch: int,
    history: Iterable[Entry],
    throttles: ThrottleRecord,
) -> PlanDocument:
    return PlanDocument(
        decision=decision.summary,
        kind=decision.kind,
        epoch=epoch,
        moves=tuple(
            PlannedMove(
                topic=m.topic, partition=m.partition, target=m.target, size_bytes=m.size_bytes
            )
            for m in moves
        ),
        moves_started=tuple(history),
        throttles=throttles,
    )


def synced(
    plan: PlanDocument,
    active: set[TopicPartition],
    throttles: ThrottleRecord,
    progress: Mapping[TopicPartition, MoveProgress] | None = None,
    stalled: Iterable[TopicPartition] = (),
) -> PlanDocument | None:
    """The plan with only the moves still active, the throttles kmedic owns now and the
    watchdog's records, or None when nothing worth a write changed. The records ride along
    with other writes, and force one only for a stalled move whose record is not stored yet:
    its clock must survive a failover exactly, a progressing move's needs no write per sample.
    Emptied, not deleted, when all are done: the move history it carries must outlive it."""
    progress = progress or {}
    kept = tuple(
        m.model_copy(update={"progress": progress.get(m.tp, m.progress)})
        for m in plan.moves
        if m.tp in active
    )
    stored = {m.tp: m.progress for m in plan.moves}
    unsaved = any(stored.get(tp) != progress.get(tp) for tp in stalled if tp in progress)
    if (
        len(kept) == len(plan.moves)
        and plan.throttles.to_field() == throttles.to_field()
        and not unsaved
    ):
        return None
    update: dict[str, Any] = {"moves": kept, "throttles": throttles}
    if not kept:
        update["progress"] = None
    return plan.model_copy(update=update)


def stored_progress(plan: PlanDocument) -> dict[TopicPartition, MoveProgress]:
    """The watchdog's records the stored plan carries, for the moves a new leader adopts."""
    return {m.tp: m.progress for m in plan.moves if m.progress is not None}


def with_progress(plan: PlanDocument, progress: PlanProgress, at: float) -> PlanDocument:
    return plan.model_copy(update={"progress": progress, "progress_at": at})


def with_throttles(plan: PlanDocument, throttles: ThrottleRecord) -> PlanDocument:
    return plan.model_copy(update={"throttles": throttles})


def stored_throttles(plan: PlanDocument | None) -> ThrottleRecord:
    """The throttles a stored plan says kmedic owns (none, for a plan written before kmedic
    recorded them: what is not recorded is never removed)."""
    return plan.throttles if plan is not None else ThrottleRecord()


def moves_to_adopt(plan: PlanDocument, known: set[TopicPartition]) -> list[Move]:
    """The stored plan's moves this instance does not run yet."""
    return [m.as_move() for m in plan.moves if m.tp not in known]


def own_partitions(plan: PlanDocument | None) -> frozenset[TopicPartition]:
    """Partitions the stored plan moves: under-replication there is kmedic's own doing."""
    return frozenset(m.tp for m in plan.moves) if plan is not None else frozenset()
