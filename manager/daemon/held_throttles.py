"""Observe mode writes nothing, so the replication throttles kmedic set for a plan it left to
Kafka stay set for as long as observe mode lasts: a broker's catch-up after a restart, on the
partitions they name, is throttled at an old heal's rate. That is said: one audit record each
time the set held changes, the gauge ``kmedic_held_throttles`` (the broker rates held), which
``KmedicThrottlesHeldWhileObserving`` warns on after an hour, and what to do - act again (the
leader removes what no move needs), or remove them by hand.

The throttles are the stored plan's (manager.coordination.plan_document): the record kmedic
keeps of what it set, read every cycle, whichever instance set them."""

from __future__ import annotations

from manager.coordination.plan_store import StoredPlan
from manager.daemon.audit_trail import AuditTrail
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE, ThrottleRecord
from manager.web.metrics import ManagerMetrics


def held_sentence(record: ThrottleRecord) -> str:
    rates = ", ".join(
        f"broker {broker} {config}={value}"
        for (broker, config), value in sorted(record.rates.items())
    )
    topics = sorted({topic for topic, _ in record.replicas})
    named = f"; throttled replicas of {', '.join(topics)}" if topics else ""
    brokers = sorted({broker for broker, _ in record.rates})
    by_hand = ",".join(str(b) for b in brokers) or "N"
    return (
        f"observe mode keeps the replication throttles kmedic set ({rates or 'no rate'}{named}): "
        "their partitions' replication, a restarted broker's catch-up included, runs at those "
        "rates until kmedic acts again (`kmedic mode act`: the leader removes what no move "
        "needs) or they are removed by hand (kafka-configs --alter --entity-type brokers "
        f"--entity-name {by_hand} --delete-config {LEADER_RATE}, {FOLLOWER_RATE})"
    )


class HeldThrottles:
    def __init__(self, trail: AuditTrail, metrics: ManagerMetrics) -> None:
        self._trail = trail
        self._metrics = metrics
        self._told: ThrottleRecord | None = None

    def observing(self, stored: StoredPlan | None) -> None:
        """An observing leader's cycle: what the stored plan says kmedic set is still set."""
        held = stored.plan.throttles if stored is not None else ThrottleRecord()
        self._metrics.observe_held_throttles(len(held.rates))
        if held and _key(held) != _key(self._told):
            self._trail.record(
                "decision",
                held_sentence(held),
                reasons=["mode: observe"],
                details={"held_throttles": held.to_field()},
            )
        self._told = held if held else None

    def acting(self) -> None:
        """Acting again: the leader removes what no move needs; nothing is held."""
        self._metrics.observe_held_throttles(0)
        self._told = None


def _key(record: ThrottleRecord | None) -> object:
    if record is None:
        return None
    return (
        sorted(record.rates.items()),
        sorted((k, sorted(v)) for k, v in record.replicas.items()),
    )
