"""What the executor keeps: the state of each move it runs, the one read of the cluster a
step judges them by, and its callbacks (its ``executor:`` config: manager.executor.config)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from manager.model.move_progress import MoveProgress
from manager.model.moves import Move, TopicPartition
from manager.throttling.adaptive import RateFigures
from manager.throttling.ownership import ThrottleRecord

Status = Literal["pending", "in_flight", "completed", "failed", "cancelled"]


@dataclass(frozen=True)
class Election:
    """What came of asking for one preferred leader election, in words. ``asked``: Kafka took
    the request without an error (whether the broker then leads is read afterwards)."""

    asked: bool
    said: str


@dataclass
class MoveState:
    move: Move
    status: Status = "pending"
    # Submitted from a predecessor's stored plan: the predecessor told its start (its end is
    # this instance's to tell).
    adopted: bool = False
    original: tuple[int, ...] = ()
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    progress: MoveProgress | None = None  # the watchdog's record (None: not sampled yet)
    stalled: bool = False  # reported as making no progress
    ended_at: float | None = None
    last_progress: float = 0.0
    # A reassignment request of this move that went unanswered (why): Kafka may have taken it
    # or not, so the move is pending again until a read tells (``Executor._start_next``).
    unanswered: str | None = None
    # Since when its reads show the target's replicas and more with no reassignment listed
    # (``executor.pending``: a reassignment just ended, the metadata not settled yet).
    settling_since: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    # The preferred leader election asked once the replicas are in place, and when: the move
    # is done once the next read shows who leads.
    election: Election | None = None
    elected_at: float = 0.0


EventCallback = Callable[[str, MoveState, dict[str, Any]], None]
# Called with the figures of the throttle rates a step changed (the adaptive throttle).
RateCallback = Callable[[list[RateFigures]], None]
# Called with the batch about to start (maybe empty) and the throttle record to store first.
ChangeGuard = Callable[[list[Move], ThrottleRecord], bool]


@dataclass(frozen=True)
class ClusterView:
    """The executor's own read, at each step, of its moves' partitions and of the brokers.

    The one place kmedic reads a broker's liveness fresher than the cycle's snapshot, and why:
    the snapshot's dead brokers are a verdict for planning (fenced or absent, with a grace or
    a class of death: ``manager.monitor.observe.dead_since``), decided once per cycle and up
    to a cycle old. The executor steps every few seconds between cycles and asks Kafka's own
    narrower question: is the broker registered and unfenced *now*? A destination fenced since
    the snapshot fails its move at the next step (a reassignment to it would hang), a broker's
    throttle config is written only while it is up, and a broker down sends and receives
    nothing, so it counts in no batch limit. It never makes a broker dead for healing: that is
    the snapshot's alone.
    """

    replicas: dict[TopicPartition, tuple[int, ...]]
    leaders: dict[TopicPartition, int]
    live_brokers: frozenset[int]
    ongoing: dict[TopicPartition, dict[str, list[int]]]
    isr: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)

    def down(self, brokers: Iterable[int]) -> frozenset[int]:
        """Of ``brokers``, those not registered and unfenced now."""
        return frozenset(brokers) - self.live_brokers
