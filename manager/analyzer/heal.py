"""Heal: give every lost replica a new home, moving nothing else. A replica is lost when its
broker is dead, or when Kafka reports it offline on a live broker that lost the log directory
holding it (a failed disk); such a broker keeps its other replicas and takes no new copy of
the partition (Kafka recreates an offline replica only when the broker restarts).

Partitions whose acks=all writes fail (live in-sync replicas below ``min.insync.replicas``)
are handled first, then largest first (then by name, so the plan is deterministic). Each dead
replica goes to the best eligible broker (see ``manager.analyzer.placement``), and the load it
brings is reserved on that broker at once, so one plan never overloads a target. A partition
whose replicas cannot all be placed is left as it was and listed as blocked, with why. The heal
of dead brokers is partial (``partial=True``): it keeps the moves of every partition that could
be placed. A drain is all or nothing: any blocked partition and it uses no moves.

One replica at a time, an early choice can take the room a later partition needed. So when the
greedy pass falls short - a partition finds no broker for a reason capacity explains, or a
replica lands on a repeated rack (or outside its isolation group's primary brokers) although a
broker with room before the heal would have given it a better place - the whole heal is solved
exactly (``manager.analyzer.heal_solver``). The exact plan replaces the greedy one when it heals
what the greedy could not or places strictly better; otherwise the greedy plan stands.

The new replica takes the dead one's place in the list; the current leader (alive, or the
partition would be offline) is then put first, so the preferred leader stays where traffic
already is and no election is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from manager.analyzer.heal_solver import DeadReplica, Quality, quality, solve_heal
from manager.analyzer.moves import ReplicaMove
from manager.analyzer.placement import Blocked, LoadOrder, choose_target, diagnose, rack_shortfall
from manager.analyzer.placement_state import ClusterState


@dataclass(frozen=True)
class Lost:
    """The replicas a heal replaces: every replica on ``brokers`` (dead, or being drained) and
    each partition's ``offline`` replicas on live brokers."""

    brokers: frozenset[int]
    offline: Mapping[int, frozenset[int]] = field(default_factory=dict)

    def of(self, p: int, replicas: tuple[int, ...]) -> frozenset[int]:
        off = self.offline.get(p, frozenset())
        return frozenset(b for b in replicas if b in self.brokers or b in off)


@dataclass
class HealPlan:
    moves: list[ReplicaMove] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    bytes_to_move: int = 0
    # Set when the one-at-a-time placement fell short and the exact search ran: what it found.
    exact: str | None = None


def plan_heal(
    state: ClusterState, leaving: frozenset[int] | None = None, *, partial: bool = False
) -> HealPlan:
    """Reassign every replica of the dead brokers (or of ``leaving``: brokers being drained,
    alive or not). Blocked partitions keep their replicas; without ``partial`` any of them
    empties the plan."""
    lost = Lost(frozenset(state.dead), state.offline) if leaving is None else Lost(leaving)
    return heal_lost(state, lost, partial=partial)


def heal_lost(state: ClusterState, lost: Lost, *, partial: bool) -> HealPlan:
    """Give every replica ``lost`` names a new home: the partitions whose acks=all writes
    fail first (they are unavailable now), then largest first."""
    plan = HealPlan()
    if not lost.brokers and not lost.offline:
        return plan
    gone, offline = lost.brokers, lost.offline
    # The partitions observed on a lost broker (a lookup in the columns, not a set test per
    # partition), as they stand now: an earlier goal of this decision may have moved some.
    observed = state.table.replicas.rows_with(gone).tolist() if gone else []
    affected = [
        p
        for p in sorted(set(offline).union(observed))
        if p in offline or not gone.isdisjoint(state.replicas[p])
    ]
    urgent = frozenset(state.writes_unavailable)
    affected.sort(key=lambda p: (p not in urgent, -state.size[p], state.topic[p], state.number[p]))
    start = _Room.of(state)
    order = LoadOrder(state)
    short: list[int] = []
    for p in affected:
        blocker = _heal_partition(state, order, p, lost, plan, start, short)
        if blocker is not None:
            plan.blocked.append(blocker)
    if plan.blocked or short:
        # One replica at a time, an early choice can take the room a later one needed.
        _solve_exactly(state, affected, lost, plan, short)
    if plan.blocked and not partial:
        plan.moves.clear()
        plan.bytes_to_move = 0
    return plan


@dataclass(frozen=True, slots=True)
class _Room:
    """Broker loads before the heal: what each broker could take on its own."""

    load_in: dict[int, float]
    load_disk: dict[int, float]
    count: dict[int, int]

    @classmethod
    def of(cls, state: ClusterState) -> _Room:
        return cls(dict(state.load_in), dict(state.load_disk), dict(state.count))

    def fits(self, state: ClusterState, b: int, p: int) -> bool:
        cap = state.policy.max_replicas_per_broker
        d_in, size = state.bin[p], state.size[p]
        return (
            (d_in <= 0 or self.load_in[b] + d_in <= state.lim_in[b])
            and (size <= 0 or self.load_disk[b] + size <= state.lim_disk[b])
            and (cap is None or self.count[b] + 1 <= cap)
        )


def _heal_partition(
    state: ClusterState,
    order: LoadOrder,
    p: int,
    lost: Lost,
    plan: HealPlan,
    start: _Room,
    short: list[int],
) -> Blocked | None:
    before = state.replicas[p]
    dead = lost.of(p, before)
    name = state.name(p)
    leader = state.leader[p]
    if leader is None or not state.alive[leader]:
        elected = [b for b in state.eligible.get(p, ()) if state.alive[b]]
        if elected:  # KIP-966: Kafka elects it itself, with every committed record
            return Blocked(
                "no_live_replica",
                f"{name} has no live leader to copy from yet: Kafka elects its eligible "
                f"leader replica {elected[0]} (no unclean election); it heals once one leads",
            )
        best = state.last_resort.get(p)
        return Blocked(
            "no_live_replica",
            f"{name} has no live leader to copy from; healing it needs an unclean election "
            "or its recreation, which kmedic never takes on its own: `kmedic recover` says "
            "what each way out would lose"
            + ("" if best is None else f" (the best now: {best.split(': ', 1)[1]})"),
        )
    if leader in state.kept_out.frozen:
        return Blocked("maintenance", f"{name} is led by a broker in maintenance")
    if p in state.foreign:  # whoever reassigns it decides where it goes
        return Blocked(
            "foreign_reassignment",
            f"{name} is being reassigned by someone else: it heals once that reassignment ends",
        )
    if leader in state.kept_out.stalled:  # every copy comes from the leader: it would stall again
        return Blocked(
            "stalled_leader",
            f"{name} is led by broker {leader}, on which a move made no progress: it heals "
            "once that broker copies again or is fenced",
        )
    d_in = state.bin[p]
    placed: list[tuple[int, int]] = []
    for gone in before:
        if gone not in dead:
            continue
        others = tuple(x for x in state.replicas[p] if x != gone and x not in dead)
        # A drained leader hands its traffic out to the replica that replaces it.
        d_out = state.bout[p] if gone == leader else 0.0
        topic, size = state.topic[p], state.size[p]
        target = choose_target(state, order, topic, size, others, d_in, d_out, avoid=dead)
        if target is None:
            _undo(state, order, p, before, placed)
            return diagnose(state, p, others, d_in, d_out, avoid=dead)
        if _better_elsewhere(state, start, p, others, target):
            short.append(p)
        state.move_replica(p, gone, target)
        order.update(target)
        placed.append((gone, target))
    after = state.replicas[p]
    short_racks = rack_shortfall(state, after)
    if short_racks is not None:
        _undo(state, order, p, before, placed)
        return Blocked("min_racks", f"{name}: the live brokers allow only a set that {short_racks}")
    _record(state, plan, p, before, lost)
    return None


def _record(
    state: ClusterState, plan: HealPlan, p: int, before: tuple[int, ...], lost: Lost
) -> None:
    """The leader (alive, or the partition would be offline) goes first: no election needed.
    A leader that is being drained was replaced in place, its successor first already."""
    leader = state.leader[p]
    after = state.replicas[p]
    if leader is not None and leader in after and after[0] != leader:
        after = (leader, *(x for x in after if x != leader))
        state.set_replicas(p, after)
    plan.moves.append(ReplicaMove(p, before, after))
    plan.bytes_to_move += state.size[p] * len(lost.of(p, before))


def _undo(
    state: ClusterState,
    order: LoadOrder | None,
    p: int,
    before: tuple[int, ...],
    placed: list[tuple[int, int]],
) -> None:
    """Take back the moves ``placed`` (dead broker, new broker) of ``p``; loads as before."""
    for gone, target in reversed(placed):
        state.move_replica(p, target, gone)
        if order is not None:
            order.update(target)
    state.set_replicas(p, before)


def _key(state: ClusterState, p: int, others: tuple[int, ...], b: int) -> tuple[bool, bool, bool]:
    """(in the primary isolation set, a new top, a new rack): what the greedy choice ranks by."""
    sets = state.allowed_sets(p)
    loc = state.loc[b]
    return (
        sets is None or b in sets[0],
        all(state.loc[o].top != loc.top for o in others),
        all(state.loc[o].rack != loc.rack for o in others),
    )


def _better_elsewhere(
    state: ClusterState, start: _Room, p: int, others: tuple[int, ...], target: int
) -> bool:
    """Could a broker that had room before the heal have placed this replica better?"""
    got = _key(state, p, others, target)
    if all(got):
        return False
    sets = state.allowed_sets(p)
    allowed = frozenset().union(*sets) if sets is not None else None
    return any(
        _key(state, p, others, b) > got
        for b in state.broker_ids
        if state.usable(b)
        and b not in others
        and (allowed is None or b in allowed)
        and start.fits(state, b, p)
    )


def _solve_exactly(
    state: ClusterState, affected: list[int], lost: Lost, plan: HealPlan, short: list[int]
) -> None:
    """Replace the greedy plan by the exact one when it heals what the greedy could not, or
    places the same replicas better; otherwise the greedy plan (or refusal) stands."""
    if any(b.constraint not in SOLVABLE for b in plan.blocked):
        return  # a partition no placement can heal: the refusal stands as it is
    greedy = [(m, quality(state, [m.p])) for m in plan.moves]
    for m, _ in reversed(greedy):
        _undo(state, None, m.p, m.before, _pairs(m, lost))
    replicas = [DeadReplica(p, b) for p in affected for b in lost.of(p, state.replicas[p])]
    solution = solve_heal(state, replicas)
    got = solution.quality
    before = _sum(q for _, q in greedy)
    if solution.targets is None or got is None or not (plan.blocked or got > before):
        for m, _ in greedy:
            _redo(state, m, lost)
        if plan.blocked:
            plan.exact = f"exact search over {len(replicas)} replicas: {solution.status}"
        return
    placed = f"the exact search placed all {len(replicas)} replicas ({solution.status})"
    if plan.blocked:
        plan.exact = (
            f"{len(plan.blocked)} partitions found no broker one replica at a time; {placed}: "
            f"{_describe(state, got)}"
        )
    else:
        plan.exact = (
            f"{len(short)} replicas took a repeated rack or a secondary group one at a time; "
            f"{placed}: {_describe(state, got)}, against {_describe(state, before)}"
        )
    plan.moves.clear()
    plan.blocked.clear()
    plan.bytes_to_move = 0
    for p in affected:
        before_p = state.replicas[p]
        for gone in lost.of(p, before_p):
            state.move_replica(p, gone, solution.targets[DeadReplica(p, gone)])
        _record(state, plan, p, before_p, lost)


SOLVABLE = frozenset({"capacity", "max_replicas_per_broker", "min_racks"})


def _pairs(m: ReplicaMove, lost: Lost) -> list[tuple[int, int]]:
    dead = lost.of(m.p, m.before)
    gone = [x for x in m.before if x in dead]
    new = [x for x in m.after if x not in m.before]
    return list(zip(gone, new, strict=True))


def _redo(state: ClusterState, m: ReplicaMove, lost: Lost) -> None:
    for gone, target in _pairs(m, lost):
        state.move_replica(m.p, gone, target)
    state.set_replicas(m.p, m.after)


def _sum(qualities: Iterable[Quality]) -> Quality:
    primary = tops = racks = 0
    for q in qualities:
        primary, tops, racks = primary + q.primary, tops + q.tops, racks + q.racks
    return Quality(primary, tops, racks)


def _describe(state: ClusterState, q: Quality) -> str:
    """The quality in the placement policy's words, summed over the healed partitions."""
    units = {"rack": None, "region": "regions", "zone": "zones"}[state.kind]
    racks = "upgrade domains" if state.kind == "zone" else "racks"
    words = (
        f"{q.racks} distinct {racks}"
        if units is None
        else (f"{q.tops} distinct {units} and {q.racks} distinct {racks}")
    )
    if any(state.allowed_sets(p) is not None for p in range(state.partition_count)):
        words += f", {q.primary} replicas in primary isolation groups"
    return words
