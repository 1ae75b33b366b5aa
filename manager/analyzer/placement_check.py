"""Judge a finished plan against the hard constraints, independently of how it was built.

The planner only proposes moves it believes legal; this check re-derives every hard
constraint from the final assignment so a planner bug surfaces as a refusal
(``plan_violates_constraints``) instead of an unsafe reassignment.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from manager.analyzer.placement import rack_shortfall
from manager.analyzer.placement_state import ClusterState


@dataclass(frozen=True, slots=True)
class BrokerTotals:
    """Per-broker load sums taken before planning, to tell which brokers gained load."""

    load_in: dict[int, float]
    load_out: dict[int, float]
    load_disk: dict[int, float]
    count: dict[int, int]

    @classmethod
    def of(cls, state: ClusterState) -> BrokerTotals:
        return cls(
            dict(state.load_in), dict(state.load_out), dict(state.load_disk), dict(state.count)
        )


EPSILON = 1e-9  # relative: float sums drift by far less


def check_plan(
    state: ClusterState,
    before: BrokerTotals,
    changes: Iterable[tuple[int, tuple[int, ...], tuple[int, ...]]],
    raising: tuple[str, int] | None = None,
) -> list[str]:
    """Violations of hard constraints by the changed partitions and the final broker loads.
    A replication factor never changes, except the one ``raising`` names (an operator's
    ``set-rf``: that topic's partitions may gain replicas up to that factor, losing none)."""
    problems: list[str] = []
    for p, old, new in changes:
        name = state.name(p)
        if len(set(new)) != len(new):
            problems.append(f"{name}: a broker appears twice in {list(new)}")
        if len(new) != len(old) and not _raised(state.topic[p], old, new, raising):
            problems.append(f"{name}: replication factor changes from {len(old)} to {len(new)}")
        added = [b for b in new if b not in old]
        for b in added:
            if not state.alive[b]:
                problems.append(f"{name}: target broker {b} is dead")
        for b in set(added) | {b for b in old if b not in new}:
            if b in state.kept_out.frozen:
                problems.append(f"{name}: broker {b} is in a domain under maintenance")
        sets = state.allowed_sets(p)
        if sets is not None and added:
            allowed = frozenset().union(*sets)
            outside = [b for b in added if b not in allowed]
            if outside:
                problems.append(f"{name}: brokers {outside} are outside its isolation group")
        short = rack_shortfall(state, new)
        if short is not None and added:
            problems.append(f"{name}: the new replica set {short}")
    cap = state.policy.max_replicas_per_broker
    for b in state.broker_ids:
        for dim, now, was, limit in (
            ("network in", state.load_in[b], before.load_in[b], state.lim_in[b]),
            ("network out", state.load_out[b], before.load_out[b], state.lim_out[b]),
            ("disk", state.load_disk[b], before.load_disk[b], state.lim_disk[b]),
        ):
            tol = EPSILON * max(abs(was), abs(limit), 1.0)
            if now > was + tol and now > limit + tol:
                problems.append(f"broker {b}: the plan pushes its {dim} over its limit")
        if cap is not None and state.count[b] > before.count[b] and state.count[b] > cap:
            problems.append(f"broker {b}: the plan gives it more than {cap} replicas")
    return problems


@dataclass(frozen=True, slots=True)
class Violation:
    """One partition breaking the placement policy as it is: ``rule`` is ``racks`` (replicas
    share a rack, or span fewer than an enforced ``min_racks``) or ``isolation``."""

    p: int
    rule: str
    message: str


def check_existing(state: ClusterState) -> list[str]:
    """Violations in the placement as it is (BookKeeper's auditor's job), as sentences."""
    return [v.message for v in violations(state)]


def violations(state: ClusterState) -> list[Violation]:
    """Every partition that breaks the policy as it is.

    A partition breaks the policy when its replicas share a rack (zone) although the cluster
    has enough racks for them to be apart, or when it spans fewer racks than an enforced
    ``min_racks``, or when a replica sits outside the topic's isolation group.
    """
    kind = state.kind
    unit = {b: (loc.top if kind == "zone" else loc.rack) for b, loc in state.loc.items()}
    available = len(set(unit.values()))
    min_racks = state.policy.min_racks if state.policy.enforce_min_racks else 0
    word = "zones" if kind == "zone" else "racks"
    found: list[Violation] = []
    # One pass over every partition each cycle: kept to plain set sizes, no helper calls.
    for p, reps in enumerate(state.replicas):
        n = len(reps)
        units = len({unit[b] for b in reps})
        if units < n and units < available:
            message = f"{state.name(p)}: replicas {list(reps)} share a rack"
            found.append(Violation(p, "racks", message))
        elif units < min_racks and units < n:
            need = min(min_racks, n)
            message = (
                f"{state.name(p)}: replicas {list(reps)} span {units} {word}, "
                f"min_racks requires {need}"
            )
            found.append(Violation(p, "racks", message))
    allowed = {
        t: frozenset().union(*sets)
        for t in set(state.topic)
        if (sets := state.topic_sets(t)) is not None
    }
    if allowed:
        for p, topic in enumerate(state.topic):
            ok = allowed.get(topic)
            if ok is not None and (outside := [b for b in state.replicas[p] if b not in ok]):
                message = f"{state.name(p)}: brokers {outside} are outside its isolation group"
                found.append(Violation(p, "isolation", message))
    return found


def _raised(
    topic: str, old: tuple[int, ...], new: tuple[int, ...], raising: tuple[str, int] | None
) -> bool:
    if raising is None or topic != raising[0]:
        return False
    return len(old) < len(new) <= raising[1] and set(old) < set(new)
