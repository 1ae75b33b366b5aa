"""The live brokers no plan may send replicas to, and why: decided once per snapshot, carried
by the planner's state (manager.analyzer.placement_state) and named by its diagnoses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from manager.model.snapshot import LEAVING_REQUESTS, Snapshot


@dataclass(frozen=True)
class KeptOut:
    frozen: frozenset[int]
    """In a failure domain under maintenance: nothing moves into or out of them."""
    leaving: frozenset[int]
    """An operator asked to drain or decommission them: they only give replicas away."""
    cordoned: frozenset[int]
    """A drain holds them cordoned (a done drain's too): they stay empty."""
    stalled: frozenset[int]
    """A move stalled on them (the executor cancelled it): no plan sends them replicas."""
    slow: frozenset[int]
    """Slow (manager.analyzer.slowness): no plan sends them replicas or leadership."""
    foreign: frozenset[int]
    """A reassignment kmedic did not start adds or removes them: left to whoever started it
    until it ends."""
    brokers: frozenset[int] = field(init=False)
    """All of them."""

    def __post_init__(self) -> None:
        every = (self.frozen, self.leaving, self.cordoned, self.stalled, self.slow, self.foreign)
        object.__setattr__(self, "brokers", frozenset().union(*every))

    @classmethod
    def of(cls, snap: Snapshot, domain: Mapping[int, str]) -> KeptOut:
        """``domain``: each broker's failure domain."""
        maintenance = set(snap.maintenance_domains)
        return cls(
            frozen=frozenset(b for b, d in domain.items() if d in maintenance),
            leaving=frozenset(
                b for r in snap.requests if r.kind in LEAVING_REQUESTS for b in r.brokers
            ),
            cordoned=frozenset(b.id for b in snap.brokers if b.cordoned),
            stalled=frozenset(b.id for b in snap.brokers if b.stalled_at_ms is not None),
            slow=frozenset(b.id for b in snap.brokers if b.is_slow),
            foreign=frozenset(
                b
                for r in snap.reassignments
                if not r.started_by_kmedic
                for b in (*r.adding_replicas, *r.removing_replicas)
            ),
        )

    def __contains__(self, broker: object) -> bool:
        return broker in self.brokers

    def because(self, broker: object) -> str:
        """Why the broker is kept out (empty: it is not)."""
        for kept, why in (
            (self.frozen, "in maintenance"),
            (self.leaving, "being drained"),
            (self.cordoned, "cordoned by a drain"),
            (self.stalled, "a move stalled on it"),
            (self.slow, "slow"),
            (self.foreign, "in a reassignment kmedic did not start"),
        ):
            if broker in kept:
                return why
        return ""
