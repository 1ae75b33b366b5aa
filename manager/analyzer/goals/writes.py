"""Restore writes: a partition whose acks=all writes fail does not wait a broker's grace.

A broker's grace (``dead_grace_ms``, minutes) is there because a dead broker often comes
back, and with it every replica it held. But a partition whose live in-sync replicas fell
below its topic's ``min.insync.replicas`` when the broker died rejects every acks=all write
meanwhile. Its replicas on the dead broker get the shorter ``write_unavailable_grace_ms``:
once their broker has been dead that long, they alone are healed (placed as any heal places),
while the broker's other replicas still wait its grace. Once every dead broker is past its
grace the heal (``manager.analyzer.goals.heal``) takes everything, these partitions first.

Only a partition led by a live broker counts: without a live leader there is nothing to copy
from, and it waits like any other. Every gate but the grace itself still holds it back (too
many dead brokers is an outage, not a broker failure). kmedic never lowers a topic's
``min.insync.replicas`` to bring writes back: that would acknowledge writes held by fewer
copies than the topic's owner asked for (and, with KIP-966, clear its eligible leaders).
"""

from __future__ import annotations

from manager.analyzer.examples import first
from manager.analyzer.goal import Context, Proposal, Settled
from manager.analyzer.goals.heal import partial_heal
from manager.analyzer.heal import Lost, heal_lost
from manager.model.decision import Reason
from manager.model.topics import topics_table


def due_replicas(ctx: Context) -> dict[int, frozenset[int]]:
    """Each write-unavailable partition's replicas on brokers dead past the short grace."""
    snap, state = ctx.snap, ctx.state
    grace = snap.policy.write_unavailable_grace_ms
    brokers = {b.id: b for b in snap.brokers}
    due: dict[int, frozenset[int]] = {}
    for p in state.writes_unavailable:
        gone = frozenset(
            b
            for b in state.replicas[p]
            if not state.alive[b] and not brokers[b].in_grace(snap.taken_at, grace)
        )
        if gone:
            due[p] = gone
    return due


class RestoreWrites:
    name = "restore_writes"
    tidying = False
    needs_calm = False

    def applies(self, ctx: Context) -> bool:
        # Only while the heal waits for a broker's grace; after it, the heal takes them first.
        return bool(ctx.state.writes_unavailable) and bool(ctx.grace)

    def propose(self, ctx: Context) -> Proposal | None:
        due = due_replicas(ctx)
        if not due:
            return None
        state = ctx.heal_state()
        plan = heal_lost(state, Lost(frozenset(), due), partial=True)
        brokers = sorted({b for gone in due.values() for b in gone})
        named = ", ".join(map(str, brokers))
        summary = (
            f"restore writes: {len(plan.moves)} partitions under min.insync.replicas "
            f"reassigned off dead brokers {named}, {plan.bytes_to_move} bytes to copy; "
            "their other partitions wait for the grace period"
        )
        told = [_why(ctx, due)]
        if plan.exact is not None and not plan.blocked:
            told.append(Reason("heal_exact_placement", plan.exact))
        # The grace is what this goal shortens; every other gate still holds it back.
        return partial_heal(state, plan, summary, told, "heal_gates_but_grace")

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        return () if ctx.snap.policy.goals.heal_dead_brokers else ("heal_dead_brokers",)


def _why(ctx: Context, due: dict[int, frozenset[int]]) -> Reason:
    state, policy = ctx.state, ctx.snap.policy
    table = topics_table(ctx.snap.topics)
    needed = table.min_insync.tolist() if table.min_insync is not None else []
    topics = dict(zip(table.names, needed, strict=False))
    named, more = first(sorted(due, key=state.name))
    shown = []
    for p in named:
        live = sum(state.alive[b] for b in state.isr[p])
        shown.append(f"{state.name(p)} ({live} of {topics[state.topic[p]]} in sync)")
    told = ", ".join(shown) + (f" and {more} more" if more else "")
    return Reason(
        "writes_unavailable",
        f"{len(due)} partitions have fewer live in-sync replicas than their "
        f"min.insync.replicas, so acks=all writes to them fail: {told}; their replicas "
        f"on dead brokers move after {policy.write_unavailable_grace_ms / 1000:.0f} s, not "
        f"the broker's {policy.dead_grace_ms / 1000:.0f} s grace period",
    )


RESTORE_WRITES = RestoreWrites()
