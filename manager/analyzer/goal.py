"""The one shape every capability of the planner has (docs/planner.md, "Goals").

A goal answers two questions about a cycle's ``Context``: does it apply, and what does it
propose. A ``Proposal`` is moves (replicas and leaderships), the partitions it could not
place and why, and what the goal has to say; ``manager.analyzer.finish`` then checks it
against the hard constraints and the budgets, refuses what cannot be done and builds the
``Decision``. A goal with nothing to move but something to say returns ``Settled`` (a noop
that says why) or ``Held`` (a refusal or a wait that names no plan); ``None`` passes the
cycle to the next goal. ``decide()`` runs the goals in the order of ``planner.GOALS``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal, Protocol, TypedDict, Unpack

from manager.analyzer.gates import Gates
from manager.analyzer.heal import HealPlan
from manager.analyzer.moves import LeaderMove, ReplicaMove
from manager.analyzer.placement import Blocked
from manager.analyzer.placement_check import BrokerTotals
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.spread import OutOfBand, out_of_band
from manager.analyzer.under_replication import recovering
from manager.model.decision import BrokerLoad, PlanKind, Reason
from manager.model.snapshot import Snapshot

# Which failing gates hold a goal's proposal back, as the goal declares it; the finish step
# applies them (manager.analyzer.finish). ``every_gate``: balancing, which needs fresh loads;
# ``heal_gates``: every gate but stale loads (a heal, drain or demote places by size without
# them); ``heal_gates_but_grace``: those but the dead brokers' grace, which restoring writes
# is there to shorten.
HeldBy = Literal["every_gate", "heal_gates", "heal_gates_but_grace"]


def broker_loads(state: ClusterState) -> dict[int, BrokerLoad]:
    """Every broker's load as ``state`` has it now (before planning, or after the moves)."""
    return {
        b: BrokerLoad(
            network_in=state.load_in[b],
            network_out=state.load_out[b],
            messages_in=state.load_msgs[b],
            disk_bytes=state.load_disk[b],
            replicas=state.count[b],
            leaders=state.leaders[b],
            network_util=state.net_util(b),
        )
        for b in state.broker_ids
    }


class Context:
    """One cycle's view for every goal: the snapshot, the planner's index of it (with loads),
    the loads before any move, and every failing gate. Built once by ``decide()``."""

    def __init__(self, snap: Snapshot, state: ClusterState, gates: Gates) -> None:
        self.snap = snap
        self.state = state
        self.failing = gates  # each gate with what it holds back
        self.gates = gates.told
        self.before = broker_loads(state)
        self.totals = BrokerTotals.of(state)
        self.over: dict[int, list[str]] = {
            b: o for b in state.broker_ids if state.usable(b) and (o := state.over_limits(b))
        }

    @property
    def stale(self) -> tuple[Reason, ...]:
        """The load-data gates that failed: they hold back balancing, never a heal."""
        return self.failing.loads

    @property
    def grace(self) -> tuple[Reason, ...]:
        """The dead brokers' grace periods still running (``goals.writes`` shortens them)."""
        return self.failing.grace

    @cached_property
    def heal_gates(self) -> tuple[Reason, ...]:
        """The failing gates that hold back a heal (and a drain or demote)."""
        return tuple(r for r in self.gates if r not in self.failing.loads)

    def holding(self, held_by: HeldBy) -> tuple[Reason, ...]:
        """The failing gates that hold back a proposal declared ``held_by``."""
        if held_by == "every_gate":
            return self.gates
        if held_by == "heal_gates":
            return self.heal_gates
        return tuple(r for r in self.heal_gates if r not in self.grace)

    @cached_property
    def health(self) -> tuple[Reason, ...]:
        """The failing gates about the cluster, not about this instance's authority."""
        return tuple(r for r in self.gates if r not in self.failing.authority)

    @cached_property
    def calm(self) -> bool:
        """No gate fails, no broker is dead or just back, no reassignment runs and every
        partition is in sync: the only time to move data no failure or limit asks to move."""
        snap, state = self.snap, self.state
        if self.gates or state.dead or recovering(snap) or snap.reassignments:
            return False
        return all(state.in_sync(p) for p in range(state.partition_count))

    @cached_property
    def unloaded(self) -> ClusterState:
        """The index without loads: a heal or drain places by size and replica count when
        the loads are stale."""
        return ClusterState(self.snap, use_loads=False, memory=self.state.memory)

    def heal_state(self) -> ClusterState:
        """Where a heal or a drain plans: without loads when they are stale."""
        return self.unloaded if self.stale else self.state

    @cached_property
    def uneven(self) -> tuple[OutOfBand, ...]:
        """Brokers outside the even-spread band (found whether even spread is on or off)."""
        return tuple(out_of_band(self.state, self.snap.policy.even_spread_threshold))

    def move_budget(self) -> int:
        """Moves this cycle may still start: the per-cycle cap, or what the hour has left."""
        policy = self.snap.policy
        left = policy.max_moves_per_hour - self.snap.recent_actions.moves_last_hour
        return max(0, min(policy.max_moves_per_cycle, left))


@dataclass(frozen=True)
class Proposal:
    """What a goal would do. ``state`` is the index it planned on, with its moves applied."""

    kind: PlanKind
    state: ClusterState
    summary: str  # what an act says it does
    # The failing gates that hold it back, as its goal declares (applied by the finish step).
    held_by: HeldBy
    replica_moves: tuple[ReplicaMove, ...] = ()
    leader_moves: tuple[LeaderMove, ...] = ()
    bytes_to_move: int = 0
    # Partitions the goal could not place, and the exact search's account of them. A partial
    # goal (the heal) acts on the rest and refuses only these; any other is refused whole.
    blocked: tuple[Blocked, ...] = ()
    exact: str | None = None
    partial: bool = False
    told: tuple[Reason, ...] = ()  # what an act says besides its actions
    unmet: tuple[Reason, ...] = ()  # the goal's own reasons it cannot act (nothing moves)
    placement_violations: int | None = None
    request: str | None = None  # the operator request served
    demotes_slow: tuple[int, ...] = ()  # the slow brokers whose leadership it moves off
    # The first reason of a refusal, when the goal serves someone ("request r1 cannot go on").
    refusal_preface: Reason | None = None

    @property
    def move_count(self) -> int:
        return len(self.replica_moves) + len(self.leader_moves)


@dataclass(frozen=True)
class Settled:
    """Nothing to move, and why: a noop."""

    summary: str
    reasons: tuple[Reason, ...] = ()
    placement_violations: int | None = None
    request: str | None = None
    request_done: bool = False
    unregister: tuple[int, ...] = ()  # a decommission's brokers, empty and stopped


@dataclass(frozen=True)
class Held:
    """The cycle stops before any plan: refused by ``reasons``, or a wait if all are waits."""

    reasons: tuple[Reason, ...] = field(default_factory=tuple)


Outcome = Proposal | Settled | Held


class Goal(Protocol):
    """One capability of the planner."""

    name: str
    # Only tidies a calm cluster (placement repair, even spread): switched off, it holds back
    # no goal after it, and nothing needs it, so its would_act raises no alert.
    tidying: bool
    # What it needs of the cycle before it applies: a calm cluster (``Context.calm``: no gate
    # fails, nothing dead, moving or out of sync), or nothing.
    needs_calm: bool

    def applies(self, ctx: Context) -> bool:
        """Whether this goal has anything to do with this snapshot."""

    def propose(self, ctx: Context) -> Outcome | None:
        """What it would do; None hands the cycle to the next goal."""

    def disabled_by(self, ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
        """The switches (``policy.goals``) that are off and hold this proposal back (or this
        noop that still asks the daemon to act: a decommission's unregister)."""


class ReplicaPlan(Protocol):
    """What every plan of replica moves has (heal, drain, repair, spread, fill, raise)."""

    @property
    def moves(self) -> Sequence[ReplicaMove]: ...

    @property
    def bytes_to_move(self) -> int: ...


class ProposalSays(TypedDict, total=False):
    """The rest of a proposal, as each goal fills it (``Proposal`` says what each is)."""

    blocked: tuple[Blocked, ...]
    exact: str | None
    partial: bool
    unmet: tuple[Reason, ...]
    placement_violations: int | None
    request: str | None
    refusal_preface: Reason | None


def replica_proposal(
    state: ClusterState,
    summary: str,
    plan: ReplicaPlan,
    held_by: HeldBy,
    told: Iterable[Reason] = (),
    *,
    kind: PlanKind = "balance",
    **says: Unpack[ProposalSays],
) -> Proposal:
    """The one builder of a proposal of replica moves: ``plan``'s moves and bytes on
    ``state``, held back by the gates ``held_by`` names (a balance: every gate)."""
    return Proposal(
        kind=kind,
        state=state,
        summary=summary,
        held_by=held_by,
        replica_moves=tuple(plan.moves),
        bytes_to_move=plan.bytes_to_move,
        told=tuple(told),
        **says,
    )


def drain_proposal(
    ctx: Context,
    state: ClusterState,
    plan: HealPlan,
    summary: str,
    told: list[Reason],
    *,
    request: str | None = None,
    refusal_preface: Reason | None = None,
) -> Proposal:
    """A drain's proposal (an operator's, or a slow broker's): ``plan`` moves every replica
    off the brokers as a heal would, held back by the heal's gates only."""
    if plan.exact is not None:
        told = [*told, Reason("heal_exact_placement", plan.exact)]
    return replica_proposal(
        state,
        summary,
        plan,
        "heal_gates",
        told,
        blocked=tuple(plan.blocked),
        exact=plan.exact,
        request=request,
        refusal_preface=refusal_preface,
    )


def leadership_switch(ctx: Context, proposed: Proposal | Settled) -> tuple[str, ...]:
    """A proposal that moves leadership needs ``leadership_moves`` on."""
    moves = isinstance(proposed, Proposal) and proposed.leader_moves
    off = moves and not ctx.snap.policy.goals.leadership_moves
    return ("leadership_moves",) if off else ()
