"""Even spread: a cluster where no broker is over a limit can still be uneven - a broker just
added holds nothing while the others carry everything. Measured three ways per usable broker:
disk share, replica count and network share (in + out over capacity).

A broker is out of band when its value is above ``threshold`` x the average plus a slack, or
below the average / ``threshold`` minus the slack. The slack keeps small clusters and idle
dimensions quiet: a broker one replica off the average, or a percent of disk, is not uneven.

Leveling (disk first: bytes are what take a new broker hours to receive; then replica count)
moves one replica at a time from the fullest broker to the emptiest one, choosing the partition
that brings the emptiest closest to the average without overshooting (fewest bytes for the
gain), under every placement constraint and limit, and never lifting a receiver past another
dimension's upper band. Network unevenness is left to the balance's evenness phase, which
moves leadership first.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from typing import Literal

from manager.analyzer.moves import ReplicaMove
from manager.analyzer.placement import LoadOrder, move_keeps_affinity, move_keeps_spread
from manager.analyzer.placement_state import ClusterState

Dimension = Literal["disk", "replicas", "network"]
DIMENSIONS: tuple[Dimension, ...] = ("disk", "replicas", "network")
# Out of band only beyond these absolute margins as well (shares are 0..1).
SLACK: dict[Dimension, float] = {"disk": 0.02, "replicas": 2.0, "network": 0.02}
UNITS: dict[Dimension, str] = {"disk": "disk share", "replicas": "replicas", "network": "network"}


@dataclass(frozen=True, slots=True)
class OutOfBand:
    """One broker outside the band of one dimension, with its numbers."""

    dimension: Dimension
    broker: int
    value: float
    average: float
    threshold: float

    def sentence(self) -> str:
        ratio = self.value / self.average if self.average else 0.0
        shown = (
            f"{self.value:.0f} replicas, average {self.average:.1f}"
            if self.dimension == "replicas"
            else f"{self.dimension} share {self.value:.1%}, average {self.average:.1%}"
        )
        side = "above" if self.value > self.average else "below"
        return (
            f"broker {self.broker} at {ratio:.2f}x the average ({shown}): {side} the band of "
            f"{self.threshold:.2f}x"
        )


@dataclass
class SpreadPlan:
    moves: list[ReplicaMove] = field(default_factory=list)
    bytes_to_move: int = 0
    budget_hit: bool = False


def value(state: ClusterState, dimension: Dimension, b: int) -> float:
    if dimension == "disk":
        return state.load_disk[b] / state.cap_disk[b]
    if dimension == "replicas":
        return float(state.count[b])
    return state.net_util(b)


def averages(state: ClusterState) -> dict[Dimension, float]:
    usable = [b for b in state.broker_ids if state.usable(b)]
    return {
        d: sum(value(state, d, b) for b in usable) / len(usable) if usable else 0.0
        for d in DIMENSIONS
    }


def out_of_band(state: ClusterState, threshold: float) -> list[OutOfBand]:
    """Every usable broker outside ``[avg / threshold - slack, avg x threshold + slack]``."""
    avg = averages(state)
    found = []
    for d in DIMENSIONS:
        low, high = avg[d] / threshold - SLACK[d], avg[d] * threshold + SLACK[d]
        for b in state.broker_ids:
            if state.usable(b) and not low <= value(state, d, b) <= high:
                found.append(OutOfBand(d, b, value(state, d, b), avg[d], threshold))
    return found


def plan_spread(state: ClusterState, threshold: float, max_moves: int) -> SpreadPlan:
    """Replica moves that bring the disk shares, then the replica counts, within the band."""
    leveler = _Leveler(state, threshold, max_moves)
    for d in ("disk", "replicas"):
        leveler.level(d)
    return leveler.plan


# Donor/receiver pairs that found no partition to move before leveling gives up.
MAX_STUCK_PAIRS = 50


def plan_fill(
    state: ClusterState, brokers: frozenset[int], threshold: float, max_moves: int
) -> SpreadPlan:
    """Moves onto ``brokers`` only (an operator's fill of new brokers), from the fullest of
    the others, until each is within the band of disk share and then of replica count."""
    leveler = _Leveler(state, threshold, max_moves, receivers=brokers)
    for d in ("disk", "replicas"):
        leveler.level(d)
    return leveler.plan


def below_band(state: ClusterState, brokers: frozenset[int], threshold: float) -> list[OutOfBand]:
    """Which of ``brokers`` are still below the band of disk share or replica count."""
    return [
        o
        for o in out_of_band(state, threshold)
        if o.broker in brokers and o.dimension != "network" and o.value < o.average
    ]


class _Leveler:
    def __init__(
        self,
        state: ClusterState,
        threshold: float,
        max_moves: int,
        receivers: frozenset[int] | None = None,
    ) -> None:
        self.s = state
        self.receivers = receivers
        self.threshold = threshold
        self.max_moves = max_moves
        self.avg = averages(state)
        self.plan = SpreadPlan()
        self.touched: set[int] = set()
        self._by_size: dict[int, list[tuple[int, str, int, int]]] = {}

    def level(self, d: Dimension) -> None:
        s, avg = self.s, self.avg
        low = avg[d] / self.threshold - SLACK[d]
        high = avg[d] * self.threshold + SLACK[d]
        order = LoadOrder(s, key=lambda b: _rank(s, d, b))
        stuck: set[tuple[int, int]] = set()
        while len(stuck) < MAX_STUCK_PAIRS:
            pair = _next_pair(s, d, order.brokers(), low, high, stuck, self.receivers)
            if pair is None:
                return
            if len(self.plan.moves) >= self.max_moves:
                self.plan.budget_hit = True
                return
            donor, receiver = pair
            p = self._pick(d, donor, receiver)
            if p is None:
                stuck.add(pair)
                continue
            before = s.replicas[p]
            s.move_replica(p, donor, receiver)
            self.touched.add(p)
            order.update(donor)
            order.update(receiver)
            self.plan.moves.append(ReplicaMove(p, before, s.replicas[p]))
            self.plan.bytes_to_move += s.size[p]

    def _pick(self, d: Dimension, donor: int, receiver: int) -> int | None:
        """The partition to move: smallest first for replica counts; for disk, the largest
        that does not carry the receiver past the average, then the smallest that does."""
        ranked = self._sizes_on(donor)
        if d == "replicas":
            candidates: Iterable[tuple[int, str, int, int]] = ranked
        else:
            s = self.s
            need = self.avg["disk"] * s.cap_disk[receiver] - s.load_disk[receiver]
            i = bisect_right(ranked, (need, "\uffff", 0, 0))
            candidates = chain(reversed(ranked[:i]), ranked[i:])
        for _, _, _, p in candidates:
            if self._movable(d, p, donor, receiver):
                return p
        return None

    def _sizes_on(self, b: int) -> list[tuple[int, str, int, int]]:
        """``b``'s partitions by size (then name), built once per broker and plan."""
        ranked = self._by_size.get(b)
        if ranked is None:
            s = self.s
            ranked = sorted((s.size[p], s.topic[p], s.number[p], p) for p in s.partitions_on(b))
            self._by_size[b] = ranked
        return ranked

    def _movable(self, d: Dimension, p: int, donor: int, receiver: int) -> bool:
        s = self.s
        reps = s.replicas[p]
        if p in self.touched or donor not in reps or receiver in reps:
            return False
        if p in s.reassigning or not s.in_sync(p) or s.leader[p] is None:
            return False
        sets = s.allowed_sets(p)
        if sets is not None and not any(receiver in group for group in sets):
            return False
        return (
            _narrows(s, d, p, donor, receiver)
            and self._receiver_fits(p, donor, receiver)
            and move_keeps_spread(s, p, donor, receiver)
            and move_keeps_affinity(s, p, donor, receiver)
        )

    def _receiver_fits(self, p: int, donor: int, receiver: int) -> bool:
        """Within the receiver's limits, and not past any dimension's upper band."""
        s, avg, t = self.s, self.avg, self.threshold
        lead = s.leader[p] == donor
        d_in, d_out, size = s.bin[p], s.bout[p] if lead else 0.0, s.size[p]
        if not s.fits(receiver, d_in, d_out, size):
            return False
        disk = (s.load_disk[receiver] + size) / s.cap_disk[receiver]
        net = (s.load_in[receiver] + d_in + s.load_out[receiver] + d_out) / (
            s.cap_in[receiver] + s.cap_out[receiver]
        )
        # Never past the band, and a disk move never leaves the receiver holding more
        # replicas than the fullest broker holds now: levelling disk must not unlevel counts.
        return (
            disk <= avg["disk"] * t + SLACK["disk"]
            and s.count[receiver] + 1 <= avg["replicas"] * t + SLACK["replicas"]
            and s.count[receiver] + 1 <= max(s.count[b] for b in s.broker_ids if s.usable(b))
            and (d_in + d_out <= 0 or net <= avg["network"] * t + SLACK["network"])
        )


def _rank(state: ClusterState, d: Dimension, b: int) -> float:
    """``d``'s value, ties broken by the other dimension: of two brokers with equal disk
    shares the one with fewer replicas receives first, and the reverse (a replica is worth
    less than any disk share told apart, a share less than one replica)."""
    if d == "disk":
        return value(state, d, b) + state.count[b] * 1e-12
    if d == "replicas":
        return value(state, d, b) + min(value(state, "disk", b), 1.0) * 1e-3
    return value(state, d, b)


def _next_pair(
    state: ClusterState,
    d: Dimension,
    brokers: list[int],
    low: float,
    high: float,
    stuck: set[tuple[int, int]],
    receivers: frozenset[int] | None = None,
) -> tuple[int, int] | None:
    """The fullest donor and emptiest receiver not yet found stuck, while one is out of band;
    with ``receivers``, only those receive (while below the band) and never give."""
    for receiver in brokers:
        if receivers is not None and (
            receiver not in receivers or value(state, d, receiver) >= low
        ):
            continue
        for donor in reversed(brokers):
            if donor == receiver or value(state, d, donor) <= value(state, d, receiver):
                break
            if receivers is not None:
                if donor in receivers:
                    continue
            elif low <= value(state, d, receiver) and value(state, d, donor) <= high:
                return None
            if (donor, receiver) not in stuck:
                return donor, receiver
    return None


def _narrows(state: ClusterState, d: Dimension, p: int, donor: int, receiver: int) -> bool:
    """The move narrows the gap between donor and receiver without turning it around."""
    if d == "replicas":
        return state.count[receiver] + 1 <= state.count[donor] - 1
    size = state.size[p]
    after_receiver = (state.load_disk[receiver] + size) / state.cap_disk[receiver]
    after_donor = (state.load_disk[donor] - size) / state.cap_disk[donor]
    return size > 0 and after_receiver <= after_donor
