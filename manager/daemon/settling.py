"""A monotonic view: a cycle never decides on metadata older than moves it saw complete.

KRaft propagates metadata to the brokers asynchronously, and each read of it is answered by
some broker: a move the executor saw complete (its reassignment gone from the controller's
list) may still show its old replica set in the next cycle's snapshot - say
``[2, 4, 1, 3]`` with ``3`` dead and ``4`` out of the ISR. Judged as it is, that view asks to
heal broker 3 again and finds broker 4 lagging with no explanation: a refusal and a page for
a cluster kmedic has just healed.

So every completed move is expected in the snapshots that follow, for ``SETTLE_BOUND_S``: a
snapshot that contradicts one is read again, and a view that still contradicts it is a
*wait* (audited once, no alert) until the bound. Past the bound a contradiction is a real
finding: it is reported once and the planner judges the view as it is. The bound is longer
than the brokers' metadata propagation (seconds) and than the executor's own settle time
(``METADATA_SETTLE_S``), and short against the grace and alert periods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from manager.analyzer.examples import examples
from manager.daemon.audit_trail import AuditTrail
from manager.model.moves import Move, TopicPartition
from manager.model.snapshot import Reassignment, Snapshot
from manager.model.topics import topics_table

SETTLE_BOUND_S = 30.0


@dataclass(frozen=True)
class Expected:
    target: tuple[int, ...]
    completed_at: float  # monotonic seconds


@dataclass(frozen=True)
class Contradiction:
    tp: TopicPartition
    seen: tuple[int, ...]
    expected: tuple[int, ...]

    def sentence(self) -> str:
        topic, partition = self.tp
        return (
            f"{topic}:{partition} shows replicas {list(self.seen)}, completed as "
            f"{list(self.expected)}"
        )


def describe(found: list[Contradiction]) -> str:
    return examples([c.sentence() for c in found], sep="; ", more="; and {} more")


class SettledMoves:
    """The moves seen complete, expected in every snapshot for ``bound_s``."""

    def __init__(self, bound_s: float = SETTLE_BOUND_S) -> None:
        self.bound_s = bound_s
        self._expected: dict[TopicPartition, Expected] = {}

    def completed(self, move: Move, now: float) -> None:
        self._expected[move.tp] = Expected(tuple(move.target), now)

    def forget(self) -> None:
        """Leadership lost: a successor's moves are its own to expect."""
        self._expected.clear()

    def check(self, snap: Snapshot, now: float) -> tuple[list[Contradiction], list[Contradiction]]:
        """(contradictions still inside the bound: the view is stale; contradictions past it:
        findings, no longer expected). Expectations past the bound are dropped either way."""
        table = topics_table(snap.topics)
        stale: list[Contradiction] = []
        found: list[Contradiction] = []
        for tp, want in sorted(self._expected.items()):
            row = table.row_of(*tp)
            replicas = table.replicas.row(row) if row is not None else None
            late = now - want.completed_at > self.bound_s
            if replicas is not None and tuple(replicas) != want.target:
                (found if late else stale).append(Contradiction(tp, tuple(replicas), want.target))
            if late:
                del self._expected[tp]
        return stale, found


def with_moves_in_flight(snap: Snapshot, in_flight: list[Move]) -> Snapshot:
    """The snapshot with every move kmedic has in flight listed as its reassignment. The
    reassignment list and the partitions' metadata are two reads, answered by different
    brokers: a move the controller just finished can be gone from the list while the
    metadata still shows its new replica catching up - unexplained under-replication, a
    refusal and a page in the middle of kmedic's own heal. A move is in flight until the
    executor sees it complete, whatever one read says."""
    listed = {(r.topic, r.partition) for r in snap.reassignments}
    missing = {m.tp: m for m in in_flight if m.tp not in listed}
    if not missing:
        return snap
    added = []
    table = topics_table(snap.topics)
    found = {row: move for tp, move in missing.items() if (row := table.row_of(*tp)) is not None}
    for row, move in sorted(found.items()):  # in the snapshot's order
        isr, replicas = table.isr.row(row), table.replicas.row(row)
        added.append(
            Reassignment(
                topic=move.topic,
                partition=move.partition,
                adding_replicas=tuple(b for b in move.target if b not in isr),
                removing_replicas=tuple(b for b in replicas if b not in move.target),
                started_by_kmedic=True,
            )
        )
    return snap.model_copy(update={"reassignments": (*snap.reassignments, *added)})


def with_stalled(snap: Snapshot, stalled: dict[int, int]) -> Snapshot:
    """The snapshot with the brokers the progress watchdog recently cancelled a move to
    marked, so that the replan sends their replicas elsewhere."""
    if not stalled:
        return snap
    brokers = tuple(
        b.model_copy(update={"stalled_at_ms": stalled[b.id]}) if b.id in stalled else b
        for b in snap.brokers
    )
    return snap.model_copy(update={"brokers": brokers})


class MonotonicView:
    """The leader's side: expects what the executor saw complete, reads a contradicting
    snapshot again, and audits a wait once per episode and each finding once."""

    def __init__(self, trail: AuditTrail, bound_s: float = SETTLE_BOUND_S) -> None:
        self.moves = SettledMoves(bound_s)
        self._trail = trail
        self.waiting = False  # the last cycle waited for the metadata to catch up

    def settle(
        self, snap: Snapshot, read_again: Callable[[], Snapshot], now: float
    ) -> tuple[Snapshot, str | None]:
        """The snapshot to decide on, and why to wait instead (None: decide)."""
        stale, found = self.moves.check(snap, now)
        if stale:
            snap = read_again()
            stale, late = self.moves.check(snap, now)
            found += late
        if found:
            self._trail.record(
                "decision",
                "the cluster metadata still contradicts moves seen complete "
                f"{self.moves.bound_s:.0f} s ago; judged as it is: {describe(found)}",
                reasons=["stale_metadata_past_bound"],
                partitions=[f"{c.tp[0]}:{c.tp[1]}" for c in found],
            )
        if not stale:
            self.waiting = False
            return snap, None
        why = (
            f"the cluster metadata is older than {len(stale)} moves already seen complete "
            f"(a broker's metadata cache lags the controller): {describe(stale)}"
        )
        if not self.waiting:  # once per episode: a wait is audited, never alerted
            self._trail.record("decision", f"wait: {why}", reasons=["stale_metadata"])
        self.waiting = True
        return snap, why
