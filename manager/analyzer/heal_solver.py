"""The exact heal: every dead replica placed at once, as an assignment problem (CP-SAT).

The greedy heal (``manager.analyzer.heal``) places one replica at a time, so an early choice can
take the room a later partition needed: it may then repeat a rack, or refuse, where a better
placement of the whole heal exists. When it falls short, this module solves the heal exactly.

The model: a boolean ``x[r, b]`` per dead replica ``r`` and eligible broker ``b`` (usable, not
already a replica of the partition, inside the topic's isolation group, and room for the
replica on its own). Hard constraints, the same as the greedy heal's:

- every dead replica gets exactly one broker, and a partition never gets one broker twice;
- per broker, the new replicas' bytes in, bytes on disk and count fit its remaining headroom
  (whole bytes, rounded against the broker: never a plan the greedy checks would refuse);
- with ``enforce_min_racks``, every healed partition spans the required racks (zones).

Objectives, in order (each solved to optimality, then fixed while the next is solved):

1. placement quality, compared as one sum over partitions: replicas kept in the isolation
   group's primary brokers, then distinct tops (regions, zones), then distinct racks;
2. the fullest receiving broker as empty as it can be (network share, or disk share when the
   heal has no loads or the policy prefers emptier disks);
3. among those, brokers that were less loaded before the heal.

One search worker and a deterministic time limit: the same snapshot always gives the same
placement, on any machine. A model past ``MAX_VARIABLES`` is not attempted (the greedy plan
stands).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from manager.analyzer.placement import required_units
from manager.analyzer.placement_state import ClusterState

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

# Deterministic seconds (CP-SAT's machine-independent work measure) per stage.
STAGE_TIME_LIMIT = 2.0
# A heal larger than this keeps the greedy plan: the exact search would not fit in a cycle.
MAX_VARIABLES = 200_000
SHARE_SCALE = 10_000  # load shares in hundredths of a percent


@dataclass(frozen=True, slots=True)
class DeadReplica:
    """One replica to re-home: partition index and the dead broker it was on."""

    p: int
    gone: int


@dataclass(frozen=True, slots=True, order=True)
class Quality:
    """A heal's placement quality, compared lexicographically (larger is better)."""

    primary: int
    tops: int
    racks: int


@dataclass(frozen=True, slots=True)
class Solution:
    """``targets`` is None when no placement was found; ``status`` says why, in words."""

    targets: dict[DeadReplica, int] | None
    status: str
    quality: Quality | None = None


def quality(
    state: ClusterState, partitions: Sequence[int], leaving: frozenset[int] = frozenset()
) -> Quality:
    """The quality of the replica sets of ``partitions`` as ``state`` holds them now, without
    the brokers in ``leaving``."""
    primary = tops = racks = 0
    for p in partitions:
        reps = [b for b in state.replicas[p] if b not in leaving]
        sets = state.allowed_sets(p)
        if sets is not None:
            primary += sum(1 for b in reps if b in sets[0])
        tops += len({state.loc[b].top for b in reps})
        racks += len({state.loc[b].rack for b in reps})
    return Quality(primary, tops, racks)


def solve_heal(state: ClusterState, dead: Sequence[DeadReplica]) -> Solution:
    """Place every dead replica optimally; ``state`` must hold the cluster before the heal."""
    model = _HealModel(state, dead)
    if model.unplaceable:
        return Solution(None, f"no eligible broker for {model.unplaceable}")
    if model.variable_count > MAX_VARIABLES:
        return Solution(
            None, f"{model.variable_count} choices exceed the exact search's {MAX_VARIABLES}"
        )
    return model.solve()


def load_solver() -> None:
    """Import OR-Tools now. It is imported on the first solve otherwise: it brings pandas,
    about 0.7 s of start that every kmedic process importing the planner (agents, tools)
    would pay; a manager pays it at its start (manager.daemon), not in its first heal."""
    from ortools.sat.python import cp_model  # noqa: F401


class _HealModel:
    def __init__(self, state: ClusterState, dead: Sequence[DeadReplica]) -> None:
        from ortools.sat.python import cp_model

        self.state = state
        self.dead = list(dead)
        self.model = cp_model.CpModel()
        self.x: dict[tuple[DeadReplica, int], cp_model.IntVar] = {}
        self.unplaceable: str | None = None
        self.variable_count = 0
        by_partition: dict[int, list[DeadReplica]] = defaultdict(list)
        for r in self.dead:
            by_partition[r.p].append(r)
        self.by_partition = dict(by_partition)
        candidates = {p: self._candidates(p) for p in self.by_partition}
        self.variable_count = sum(len(candidates[r.p]) for r in self.dead)
        for p, cands in candidates.items():
            if not cands:
                self.unplaceable = state.name(p)
                return
        if self.variable_count > MAX_VARIABLES:
            return
        for r in self.dead:
            for b in candidates[r.p]:
                self.x[r, b] = self.model.new_bool_var(f"x_{r.p}_{r.gone}_{b}")
        self._constrain(candidates)

    def _candidates(self, p: int) -> list[int]:
        state = self.state
        dead = {r.gone for r in self.by_partition[p]}
        live = {b for b in state.replicas[p] if b not in dead}
        sets = state.allowed_sets(p)
        allowed = frozenset().union(*sets) if sets is not None else None
        return [
            b
            for b in state.broker_ids
            if state.usable(b)
            and b not in live
            and b not in dead
            and (allowed is None or b in allowed)
            and state.fits(b, state.bin[p], 0.0, state.size[p])
        ]

    def _constrain(self, candidates: dict[int, list[int]]) -> None:
        state, model, x = self.state, self.model, self.x
        for r in self.dead:
            model.add_exactly_one(x[r, b] for b in candidates[r.p])
        incoming: dict[int, list[tuple[DeadReplica, cp_model.IntVar]]] = defaultdict(list)
        for (r, b), var in x.items():
            incoming[b].append((r, var))
        for p, reps in self.by_partition.items():
            for b in candidates[p]:
                model.add_at_most_one(x[r, b] for r in reps)
        cap = state.policy.max_replicas_per_broker
        for b, pairs in incoming.items():
            if cap is not None:
                model.add(sum(v for _, v in pairs) <= cap - state.count[b])
            ins = [(math.ceil(state.bin[r.p]), v) for r, v in pairs if state.bin[r.p] > 0]
            if ins:
                room = math.floor(state.lim_in[b] - state.load_in[b])
                model.add(sum(c * v for c, v in ins) <= room)
            disk = [(state.size[r.p], v) for r, v in pairs if state.size[r.p] > 0]
            if disk:
                room = math.floor(state.lim_disk[b] - state.load_disk[b])
                model.add(sum(c * v for c, v in disk) <= room)
        self._spread_terms(candidates)

    def _spread_terms(self, candidates: dict[int, list[int]]) -> None:
        """Indicators for each new top and rack a partition gains; min_racks as a bound."""
        state, model = self.state, self.model
        self.primary: list[cp_model.IntVar] = []
        self.tops: list[cp_model.IntVar] = []
        self.racks: list[cp_model.IntVar] = []
        for p, reps in self.by_partition.items():
            dead = {r.gone for r in reps}
            live = [b for b in state.replicas[p] if b not in dead]
            sets = state.allowed_sets(p)
            if sets is not None:
                self.primary += [self.x[r, b] for r in reps for b in candidates[p] if b in sets[0]]
            new_tops = self._gains(p, reps, candidates[p], live, lambda b: state.loc[b].top)
            new_racks = self._gains(p, reps, candidates[p], live, lambda b: state.loc[b].rack)
            self.tops += new_tops
            self.racks += new_racks
            need = required_units(state, len(state.replicas[p]))
            if need:
                if state.kind == "zone":
                    have, gains = len({state.loc[b].top for b in live}), new_tops
                else:
                    have, gains = len({state.loc[b].rack for b in live}), new_racks
                model.add(have + sum(gains) >= need)

    def _gains(
        self,
        p: int,
        reps: list[DeadReplica],
        cands: list[int],
        live: list[int],
        unit_of: Callable[[int], str],
    ) -> list[cp_model.IntVar]:
        taken = {unit_of(b) for b in live}
        members: dict[str, list[cp_model.IntVar]] = defaultdict(list)
        for b in cands:
            unit = unit_of(b)
            if unit not in taken:
                members[unit] += [self.x[r, b] for r in reps]
        gains = []
        for unit, xs in sorted(members.items()):
            gained = self.model.new_bool_var(f"g_{p}_{unit}")
            self.model.add(gained <= sum(xs))
            gains.append(gained)
        return gains

    def solve(self) -> Solution:
        from ortools.sat.python import cp_model

        model = self.model
        racks_max = len(self.racks) + 1
        tops_max = len(self.tops) + 1
        terms = [*self.primary, *self.tops, *self.racks]
        weights = [
            *[tops_max * racks_max] * len(self.primary),
            *[racks_max] * len(self.tops),
            *[1] * len(self.racks),
        ]
        placement = cp_model.LinearExpr.weighted_sum(terms, weights)
        model.maximize(placement)
        solver = _solver()
        status = solver.solve(model)
        if status == cp_model.INFEASIBLE:
            return Solution(None, "no placement holds every constraint (proven by exact search)")
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return Solution(None, "the exact search found no placement within its time limit")
        proven = status == cp_model.OPTIMAL
        model.add(placement >= round(solver.objective_value))
        self._hint(solver)
        fullest = self._fullest_share()
        model.minimize(fullest)
        if solver.solve(model) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            model.add(fullest <= round(solver.objective_value))
            self._hint(solver)
        ranks = [self._rank(b) for _, b in self.x]
        model.minimize(cp_model.LinearExpr.weighted_sum(list(self.x.values()), ranks))
        if solver.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return Solution(None, "the exact search lost its placement between stages")
        targets = {r: b for (r, b), v in self.x.items() if solver.value(v)}
        leaving = frozenset(r.gone for r in self.dead)
        base = quality(self.state, list(self.by_partition), leaving)
        found = Quality(
            base.primary + sum(solver.value(v) for v in self.primary),
            base.tops + sum(solver.value(v) for v in self.tops),
            base.racks + sum(solver.value(v) for v in self.racks),
        )
        word = "optimal" if proven else "best found within the time limit"
        return Solution(targets, word, found)

    def _hint(self, solver: cp_model.CpSolver) -> None:
        self.model.clear_hints()  # type: ignore[no-untyped-call]
        for var in self.x.values():
            self.model.add_hint(var, solver.value(var))

    def _by_disk(self) -> bool:
        state = self.state
        return not state.use_loads or state.policy.prefer_emptier_disks

    def _load(self, b: int) -> tuple[float, float]:
        """(load now, capacity) of ``b`` in the measure the heal ranks brokers by."""
        state = self.state
        if self._by_disk():
            return state.load_disk[b], state.cap_disk[b]
        return state.load_in[b] + state.load_out[b], state.cap_in[b] + state.cap_out[b]

    def _fullest_share(self) -> cp_model.IntVar:
        state = self.state
        receivers: dict[int, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
        for (r, b), v in self.x.items():
            added = state.size[r.p] if self._by_disk() else state.bin[r.p]
            receivers[b].append((round(SHARE_SCALE * added / self._load(b)[1]), v))
        ceiling = max(
            (self._rank(b) + sum(c for c, _ in terms) for b, terms in receivers.items()),
            default=0,
        )
        fullest = self.model.new_int_var(0, ceiling, "fullest")
        for b, terms in receivers.items():
            self.model.add(fullest >= self._rank(b) + sum(c * v for c, v in terms))
        return fullest

    def _rank(self, b: int) -> int:
        """The broker's load share before the heal, in hundredths of a percent."""
        now, cap = self._load(b)
        return round(SHARE_SCALE * now / cap)


def _solver() -> cp_model.CpSolver:
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = STAGE_TIME_LIMIT
    solver.parameters.random_seed = 0
    return solver
