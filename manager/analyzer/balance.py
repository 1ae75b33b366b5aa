"""Balance: brokers over their limits shed load, leadership first, replicas second.

Phase 1 (limits): every broker over its network-in, network-out or disk limit, worst first,
 a) hands leadership of its busiest led partitions to in-sync followers with headroom (no data
    moves: the replica list is reordered and a preferred election follows);
 b) then moves replicas, best load-shed per byte first, each to the least-loaded broker that
    satisfies every placement constraint and stays within its own limits.
Phase 2 (evenness): brokers whose network load (in + out over capacity) is above
``balance_threshold`` x the cluster average shed towards the average the same way, never
lifting a receiver above that line. Both phases stop at the move budget.

A partition is moved at most once per plan; partitions in reassignment or not fully in sync
are left alone. Everything is deterministic: ties break on broker id and partition name.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from manager.analyzer.moves import LeaderMove, ReplicaMove
from manager.analyzer.placement import LoadOrder, move_keeps_affinity, move_keeps_spread
from manager.analyzer.placement_state import ClusterState


@dataclass
class BalancePlan:
    leader_moves: list[LeaderMove] = field(default_factory=list)
    replica_moves: list[ReplicaMove] = field(default_factory=list)
    bytes_to_move: int = 0
    still_over: dict[int, list[str]] = field(default_factory=dict)
    budget_hit: bool = False
    target_util: float = 0.0
    busiest_ratio: float = 0.0

    @property
    def move_count(self) -> int:
        return len(self.leader_moves) + len(self.replica_moves)


class _Balancer:
    def __init__(self, state: ClusterState, max_moves: int) -> None:
        self.s = state
        self.max_moves = max_moves
        self.plan = BalancePlan()
        self.touched: set[int] = set()
        self.order = LoadOrder(state)

    def budget_left(self) -> bool:
        if self.plan.move_count >= self.max_moves:
            self.plan.budget_hit = True
            return False
        return True

    def movable(self, p: int) -> bool:
        s = self.s
        return p not in self.touched and p not in s.reassigning and s.in_sync(p)

    def shed_leadership(
        self, b: int, done: Callable[[], bool], ceiling: Callable[[int], bool]
    ) -> None:
        """Hand leadership of ``b``'s partitions to followers until ``done()``."""
        s = self.s
        led = [p for p in s.partitions_on(b) if s.leader[p] == b and s.bout[p] > 0]
        led.sort(key=lambda p: (-s.bout[p], s.topic[p], s.number[p]))
        for p in led:
            if done() or not self.budget_left():
                return
            if not self.movable(p):
                continue
            out = s.bout[p]
            best: tuple[float, int] | None = None
            for f in s.isr[p]:
                if f == b or not s.usable(f) or not s.fits(f, 0.0, out, 0.0, adds_replica=False):
                    continue
                s.load_out[f] += out
                ok = ceiling(f)
                s.load_out[f] -= out
                if ok and (best is None or (s.net_util(f), f) < best):
                    best = (s.net_util(f), f)
            if best is None:
                continue
            before = s.replicas[p]
            s.move_leader(p, best[1])
            self.touched.add(p)
            self.order.update(b)
            self.order.update(best[1])
            self.plan.leader_moves.append(LeaderMove(p, before, s.replicas[p], best[1]))

    def shed_replicas(
        self,
        b: int,
        done: Callable[[], bool],
        score: Callable[[int], float],
        ceiling: Callable[[int], bool],
    ) -> None:
        """Move replicas off ``b``, highest ``score`` first, until ``done()``.

        Scores only fall as ``b`` sheds load (they are capped by what is still over), so a
        lazy heap is exact: a popped entry whose fresh score lost its lead is pushed back.
        """
        s = self.s
        heap = [(-score(p), s.topic[p], s.number[p], p) for p in s.partitions_on(b)]
        heap = [e for e in heap if e[0] < 0 and self.movable(e[3])]
        heapq.heapify(heap)
        while heap:
            if done() or not self.budget_left():
                return
            _, topic, number, p = heapq.heappop(heap)
            if p in self.touched or s.leader[p] is None:
                continue
            fresh = score(p)
            if fresh <= 0:
                continue
            if heap and -heap[0][0] > fresh * (1 + 1e-12):
                heapq.heappush(heap, (-fresh, topic, number, p))
                continue
            target = self._target(b, p, ceiling)
            if target is None:
                continue
            before = s.replicas[p]
            s.move_replica(p, b, target)
            self.touched.add(p)
            self.order.update(b)
            self.order.update(target)
            self.plan.replica_moves.append(ReplicaMove(p, before, s.replicas[p]))
            self.plan.bytes_to_move += s.size[p]

    def _target(self, b: int, p: int, ceiling: Callable[[int], bool]) -> int | None:
        s = self.s
        lead = s.leader[p] == b
        d_in, d_out, size = s.bin[p], (s.bout[p] if lead else 0.0), float(s.size[p])
        reps = s.replicas[p]
        sets = s.allowed_sets(p)
        allowed = frozenset().union(*sets) if sets is not None else None
        for _, t in self.order.keys:
            if t in reps or (allowed is not None and t not in allowed):
                continue
            if not s.fits(t, d_in, d_out, size):
                continue
            s.load_in[t] += d_in
            s.load_out[t] += d_out
            ok = ceiling(t)
            s.load_in[t] -= d_in
            s.load_out[t] -= d_out
            if not ok:
                continue
            if move_keeps_spread(s, p, b, t) and move_keeps_affinity(s, p, b, t):
                return t
        return None


def plan_balance(state: ClusterState, max_moves: int) -> BalancePlan:
    bal = _Balancer(state, max_moves)
    s = state
    usable = [b for b in s.broker_ids if s.usable(b)]
    over = [b for b in usable if s.over_limits(b)]
    over.sort(key=lambda b: (-_worst_excess(s, b), b))

    def no_ceiling(_: int) -> bool:
        return True

    for b in over:
        if s.load_out[b] > s.lim_out[b]:
            bal.shed_leadership(b, _out_ok(s, b), no_ceiling)
        bal.shed_replicas(b, _within_limits(s, b), _limit_score(s, b), no_ceiling)

    total_load = sum(s.load_in[b] + s.load_out[b] for b in usable)
    total_cap = sum(s.cap_in[b] + s.cap_out[b] for b in usable)
    mean = total_load / total_cap if total_cap else 0.0
    line = s.policy.balance_threshold * mean
    bal.plan.target_util = line
    bal.order = LoadOrder(s, key=s.net_util)

    def under_line(t: int) -> bool:
        return s.net_util(t) <= line

    hot = sorted((b for b in usable if s.net_util(b) > line), key=lambda b: (-s.net_util(b), b))
    for b in hot:
        if not bal.budget_left():
            break
        done = _under(s, b, line)
        bal.shed_leadership(b, done, under_line)
        bal.shed_replicas(b, done, _net_score(s, b, line), under_line)

    bal.plan.still_over = {b: o for b in usable if (o := s.over_limits(b))}
    busiest = max((s.net_util(b) for b in usable), default=0.0)
    bal.plan.busiest_ratio = busiest / mean if mean else 1.0
    return bal.plan


def _out_ok(s: ClusterState, b: int) -> Callable[[], bool]:
    return lambda: s.load_out[b] <= s.lim_out[b]


def _within_limits(s: ClusterState, b: int) -> Callable[[], bool]:
    return lambda: not s.over_limits(b)


def _under(s: ClusterState, b: int, line: float) -> Callable[[], bool]:
    return lambda: s.net_util(b) <= line


def _worst_excess(s: ClusterState, b: int) -> float:
    return max(
        s.load_in[b] / s.lim_in[b], s.load_out[b] / s.lim_out[b], s.load_disk[b] / s.lim_disk[b]
    )


def _limit_score(s: ClusterState, b: int) -> Callable[[int], float]:
    """Share of ``b``'s remaining excess a move sheds, per byte moved."""

    def score(p: int) -> float:
        ex_in = s.load_in[b] - s.lim_in[b]
        ex_out = s.load_out[b] - s.lim_out[b]
        ex_disk = s.load_disk[b] - s.lim_disk[b]
        out = s.bout[p] if s.leader[p] == b else 0.0
        benefit = 0.0
        if ex_in > 0:
            benefit += min(s.bin[p], ex_in) / s.lim_in[b]
        if ex_out > 0:
            benefit += min(out, ex_out) / s.lim_out[b]
        if ex_disk > 0:
            benefit += min(float(s.size[p]), ex_disk) / s.lim_disk[b]
        return benefit / (s.size[p] + 1.0)

    return score


def _net_score(s: ClusterState, b: int, line: float) -> Callable[[int], float]:
    """Network load a move sheds (capped at what is above the line) per byte moved."""
    cap = s.cap_in[b] + s.cap_out[b]

    def score(p: int) -> float:
        excess = s.load_in[b] + s.load_out[b] - line * cap
        if excess <= 0:
            return 0.0
        load = s.bin[p] + (s.bout[p] if s.leader[p] == b else 0.0)
        return min(load, excess) / (s.size[p] + 1.0)

    return score
