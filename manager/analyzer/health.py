"""Facts about a snapshot that the daemon reports as metrics and alerts (pure)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manager.analyzer.under_replication import under_replication
from manager.model.decision import Decision
from manager.model.reasons import AUTHORITY_CODES, ReasonCode
from manager.model.snapshot import Snapshot
from manager.model.topics import topics_table


@dataclass(frozen=True)
class HealthFacts:
    dead_brokers: int
    waiting_brokers: int  # dead, but still inside the grace period
    urp_explained: int
    urp_unexplained: int
    load_age_s: float
    load_valid_fraction: float


def health_facts(snap: Snapshot) -> HealthFacts:
    """Under-replicated partitions split by whether the rule explains them
    (manager.analyzer.under_replication, as the gate judges them), and how fresh and complete
    the load data is."""
    dead = [b.id for b in snap.brokers if not b.alive]
    urp = under_replication(snap)
    table = topics_table(snap.topics)
    total = len(table)
    valid = int(np.count_nonzero(table.loads.known & table.loads.valid)) if table.loads else 0
    newest_report: int | None = None
    for b in snap.brokers:
        if b.last_stats_ms is not None:
            newest_report = max(newest_report or 0, b.last_stats_ms)
    age = (snap.taken_at - newest_report) / 1000 if newest_report is not None else float("inf")
    return HealthFacts(
        dead_brokers=len(dead),
        waiting_brokers=len(in_grace(snap)),
        urp_explained=urp.explained,
        urp_unexplained=len(urp.unexplained),
        load_age_s=max(0.0, age),
        load_valid_fraction=valid / total if total else 1.0,
    )


def alerts_for(decision: Decision, *, audit_on_failover: bool) -> dict[str, str]:
    """The alerts a decision keeps active: one per reason code of a refusal or of the
    partitions a partial heal left unhealed, naming each (authority reasons are not alerts: a
    standby is supposed to refuse), plus the audit failover. name -> sentence."""
    active: dict[str, str] = {}
    refused = decision.reasons if decision.outcome == "refuse" else ()
    # A partial heal refuses its unhealed partitions by the same names as a refusal does, so
    # the alert stays the same one when the healed part is done and only they are left.
    for reason in (*refused, *decision.unhealed):
        if reason.code not in AUTHORITY_CODES:
            name = refusal_alert(reason.code)
            told = active.get(name)
            active[name] = reason.message if told is None else f"{told}; {reason.message}"
    if switched_off(decision) and not decision.tidying:
        # Work kmedic sees and may not do: named after the switches that hold it back.
        active["disabled:" + ",".join(decision.disabled_by)] = decision.summary
    if held_by_observe_mode(decision):
        # Observe mode pages for what act mode would have healed, as act mode pages for what
        # it cannot heal: a new install watching a cluster paged nobody for a dead broker.
        active[WOULD_HEAL_ALERT] = decision.summary
    if audit_on_failover:
        active["audit_on_failover"] = "the audit topic cannot take records; writing to failover"
    return active


REFUSAL_PREFIX = "refused:"


def refusal_alert(code: ReasonCode) -> str:
    """The alert a refusal for ``code`` raises."""
    return f"{REFUSAL_PREFIX}{code}"


def is_refusal_alert(name: str) -> bool:
    return name.startswith(REFUSAL_PREFIX)


WOULD_HEAL_ALERT = "observe_mode:would_heal"


def held_by_observe_mode(decision: Decision) -> bool:
    """A heal decided and kept from the cluster by observe mode (not by a goal's switch): the
    replicas it would restore stay lost until a person heals them or lets kmedic act."""
    return decision.kind == "heal" and decision.would_act is not None and not switched_off(decision)


def switched_off(decision: Decision) -> bool:
    """A decision to act that a goal's switch keeps from the cluster (not observe mode)."""
    return bool(decision.disabled_by)


def in_grace(snap: Snapshot) -> list[int]:
    """Dead brokers still inside their grace period: the manager waits for them."""
    grace = snap.policy.dead_grace_ms
    return [b.id for b in snap.brokers if b.in_grace(snap.taken_at, grace)]


def next_grace_end_ms(snap: Snapshot) -> int | None:
    """When the first grace period still running ends (None: none runs): the cycle that sees
    it over is the one that may heal, so the daemon holds one then, not at its next tick. The
    shorter grace of write-unavailable partitions counts too (``goals.writes``): at worst one
    cycle more, for a broker that held none."""
    policy = snap.policy
    ends = [
        end
        for grace in (
            policy.dead_grace_ms,
            min(policy.write_unavailable_grace_ms, policy.dead_grace_ms),
        )
        for b in snap.brokers
        if b.in_grace(snap.taken_at, grace) and (end := b.grace_ends_ms(grace)) is not None
    ]
    # And when a waiting broker's class may change with no new word from its agent (its
    # silence passing the confirmation: a lost host is healed then, not at the next tick).
    ends += [
        b.death.recheck_at_ms
        for b in snap.brokers
        if b.in_grace(snap.taken_at, policy.dead_grace_ms)
        and b.death is not None
        and b.death.recheck_at_ms is not None
        and b.death.recheck_at_ms > snap.taken_at
    ]
    return min(ends, default=None)


def heal_needed(snap: Snapshot) -> bool:
    """Some partition still has a replica to heal: on a dead broker, or offline on a live one.
    A dead broker whose replicas were all moved needs nothing more."""
    dead = [b.id for b in snap.brokers if not b.alive]
    table = topics_table(snap.topics)
    return bool(table.offline.values.size) or bool(np.isin(table.replicas.values, dead).any())
