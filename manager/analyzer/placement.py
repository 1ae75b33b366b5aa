"""Choosing a broker for one replica under every placement constraint.

Hard constraints (a target that fails one is never chosen): alive and outside domains under
maintenance, not already a replica of the partition, inside the topic's isolation group
(primary, then secondary), within capacity limits and max replicas per broker after the move,
and - when ``enforce_min_racks`` - the final replica set spans at least
``min(min_racks, replication factor)`` racks (zones under the zone policy).

Soft preferences, in order: more distinct regions/zones, then more distinct racks; for topics in
an anti-affinity group, the failure domain, then the broker, holding the fewest replicas of
the group; then the least-loaded broker (network, or disk with ``prefer_emptier_disks``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass

from manager.analyzer.placement_state import ClusterState
from manager.model.racks import min_rack_units, spread


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why no broker could take a replica: the constraint and one sentence."""

    constraint: str
    message: str


class LoadOrder:
    """Usable brokers sorted by load, kept sorted as reservations change their load."""

    def __init__(self, state: ClusterState, key: Callable[[int], float] | None = None) -> None:
        self.state = state
        self.key = key or state.load_key
        self.keys: list[tuple[float, int]] = sorted(
            (self.key(b), b) for b in state.broker_ids if state.usable(b)
        )
        self._key = {b: k for k, b in self.keys}

    def brokers(self) -> list[int]:
        return [b for _, b in self.keys]

    def update(self, b: int) -> None:
        old = self._key.get(b)
        if old is None:
            return
        del self.keys[bisect_left(self.keys, (old, b))]
        new = self.key(b)
        self._key[b] = new
        insort(self.keys, (new, b))


def required_units(state: ClusterState, replication: int) -> int:
    """Distinct racks (zones) the final replica set must span; 0 when not enforced."""
    if not state.policy.enforce_min_racks:
        return 0
    return min(state.policy.min_racks, replication)


def choose_target(
    state: ClusterState,
    order: LoadOrder,
    topic: str,
    size: int,
    others: tuple[int, ...],
    d_in: float,
    d_out: float,
    avoid: frozenset[int] = frozenset(),
) -> int | None:
    """The best broker for a new replica of ``topic`` next to ``others`` (never one in
    ``avoid``: a live broker whose copy of the partition was lost); None if none fits."""
    sets = state.topic_sets(topic)
    group = state.aa_group.get(topic)
    taken_tops = {state.loc[b].top for b in others}
    taken_racks = {state.loc[b].rack for b in others}
    for allowed in sets if sets is not None else (None,):
        best: tuple[tuple[int, int, int, int, float], int] | None = None
        for load, b in order.keys:
            if b in others or b in avoid or (allowed is not None and b not in allowed):
                continue
            loc = state.loc[b]
            new_top = loc.top not in taken_tops
            new_rack = loc.rack not in taken_racks
            if best is not None and (
                # Sorted by load: a broker of a worse spread cannot win, nor, outside an
                # anti-affinity group, one of the same spread (its load is no lower).
                (-new_top, -new_rack) > best[0][:2]
                or (group is None and (-new_top, -new_rack) == best[0][:2])
            ):
                continue
            if not state.fits(b, d_in, d_out, size):
                continue
            if group is None:
                key = (-new_top, -new_rack, 0, 0, load)
                if new_top and new_rack:  # sorted by load: nothing later can beat this
                    best = (key, b)
                    break
            else:
                key = (
                    -new_top,
                    -new_rack,
                    state.aa_domain[group][state.domain[b]],
                    state.aa_broker[group][b],
                    load,
                )
            if best is None or key < best[0]:
                best = (key, b)
        if best is not None:
            return best[1]
    return None


def diagnose(
    state: ClusterState,
    p: int,
    others: tuple[int, ...],
    d_in: float,
    d_out: float,
    avoid: frozenset[int] = frozenset(),
) -> Blocked:
    """Name the constraint that left no broker for a new replica of ``p``."""
    name = state.name(p)
    candidates = [
        b for b in state.broker_ids if state.alive[b] and b not in others and b not in avoid
    ]
    if not candidates:
        return Blocked("live_brokers", f"{name}: no live broker outside its replica set")
    candidates = [b for b in candidates if b not in state.kept_out.frozen]
    if not candidates:
        return Blocked("maintenance", f"{name}: every other live broker is in maintenance")
    sets = state.allowed_sets(p)
    if sets is not None:
        allowed = frozenset().union(*sets)
        candidates = [b for b in candidates if b in allowed]
        if not candidates:
            return Blocked(
                "isolation_group",
                f"{name}: no usable broker left in the isolation group of {state.topic[p]!r}",
            )
    kept = {b: why for b in candidates if (why := state.kept_out.because(b))}
    if kept and len(kept) == len(candidates):
        said = ", ".join(f"broker {b} {why}" for b, why in sorted(kept.items()))
        return Blocked(
            "kept_out", f"{name}: every eligible broker is kept out of new replicas ({said})"
        )
    candidates = [b for b in candidates if b not in kept]
    cap = state.policy.max_replicas_per_broker
    if cap is not None:
        candidates = [b for b in candidates if state.count[b] + 1 <= cap]
        if not candidates:
            return Blocked(
                "max_replicas_per_broker",
                f"{name}: every eligible broker already holds {cap} replicas",
            )
    return Blocked(
        "capacity",
        f"{name}: no eligible broker has headroom for {d_in:.0f} B/s in, "
        f"{d_out:.0f} B/s out and {state.size[p]} bytes on disk",
    )


def rack_shortfall(state: ClusterState, replicas: tuple[int, ...]) -> str | None:
    """A sentence if the replica set spans fewer racks (zones) than enforced, else None."""
    need = required_units(state, len(replicas))
    if need == 0 or (need == 1 and replicas):  # nothing enforced, or any set spans one
        return None
    have = min_rack_units((state.loc[b] for b in replicas), state.kind)
    if have >= need:
        return None
    unit = "zones" if state.kind == "zone" else "racks"
    return f"spans {have} {unit}, min_racks requires {need}"


def move_keeps_spread(state: ClusterState, p: int, old: int, new: int) -> bool:
    """A move never makes rack spread worse, nor breaks an enforced minimum."""
    before = state.replicas[p]
    after = tuple(new if x == old else x for x in before)
    if spread(state.loc[b] for b in after) < spread(state.loc[b] for b in before):
        return False
    return rack_shortfall(state, after) is None


def move_keeps_affinity(state: ClusterState, p: int, old: int, new: int) -> bool:
    """For anti-affinity topics, a move may not make the group less even."""
    group = state.aa_group.get(state.topic[p])
    if group is None:
        return True
    d_old, d_new = state.domain[old], state.domain[new]
    doms = state.aa_domain[group]
    if d_old != d_new and doms[d_new] + 1 > doms[d_old] - 1:
        return False
    brokers = state.aa_broker[group]
    return brokers[new] + 1 <= brokers[old] - 1


def place_new_partition(
    state: ClusterState,
    order: LoadOrder,
    topic: str,
    replication: int,
    size: int,
    d_in: float,
    d_out: float,
) -> tuple[int, ...] | None:
    """Replicas for a new partition (leader first), reserving its load; None if impossible.

    This is how later placements honour anti-affinity groups: existing replicas never move
    because a topic joined a group, but each new one goes where the group is thinnest.
    """
    chosen: tuple[int, ...] = ()
    for i in range(replication):
        lead = i == 0
        target = choose_target(state, order, topic, size, chosen, d_in, d_out if lead else 0.0)
        if target is None:
            return None
        state.reserve(topic, target, d_in, d_out if lead else 0.0, size)
        order.update(target)
        chosen = (*chosen, target)
    if rack_shortfall(state, chosen) is not None:
        return None
    return chosen
