"""Failure readiness (pure): would kmedic heal the death of each broker, and of each rack,
before it happens? Each scenario is the snapshot with those brokers dead past their grace
period - out of every ISR, their partitions led by the next in-sync replica, or offline - run
through the real gates and planner (``decide``), as the leading manager would on that day.

A scenario is *healable* when the decision is a full heal (or nothing needs copying); else the
verdict says why: a refusal's reasons, or a partial heal's partitions left unhealed with theirs.
A loss that is not healable is one of two things, and only the first is a risk to alert on:

- *at risk*: kmedic could not heal it - no placement keeps the constraints (an isolation group
  without a spare broker, too few racks, capacity), no live replica is left, or the heal needs
  more moves than the budgets allow at all (``max_moves_per_cycle``, or ``max_moves_per_hour``
  with no move done in the hour before: a misconfiguration found before the day, not on it);
- *left to an operator*: kmedic would, by its policy, leave it to a human - more brokers at
  once than ``max_dead_brokers`` lets it heal, a domain in maintenance - or cannot judge it
  now because the cluster is already in an incident (a broker already dead or waiting,
  unexplained under-replication, a foreign reassignment, no quorum leader). Reported, never
  alerted: the incident has alerts of its own, and a policy is a decision, not a risk.
Each scenario is planned on the cluster as it will be once kmedic's own moves are done
(``settled``): the planner holds while they run, and a drain or balance in flight hid every
risk as "healable, 0 moves". The bytes to copy are the heal's; the busiest survivor is by
network use after the heal; the time from the loss to fully replicated is estimated by
manager.analyzer.heal_time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from manager.analyzer.heal_time import Pace, heal_seconds, host_lost_heal_seconds
from manager.analyzer.planner import decide
from manager.model.decision import Decision, Reason
from manager.model.plan_progress import duration
from manager.model.racks import location_of
from manager.model.reasons import ReasonCode
from manager.model.snapshot import Leadership, RecentActions, Snapshot
from manager.model.topics import Derived, Topics, topics_table

ScenarioKind = Literal["broker", "rack", "domain"]
Standing = Literal["healable", "left_to_operator", "at_risk"]

# The reasons that say kmedic could not heal the loss. Every other reason a scenario can be
# refused or held for is its policy or the cluster's present state (see the module's words).
RISK_CODES: frozenset[ReasonCode] = frozenset(
    {
        "plan_violates_constraints",
        "no_live_replica",
        "action_budget_exceeded",
        "hourly_budget_exceeded",
    }
)

ASSUMED_MOVE_BYTES_PER_S = 20e6  # per move, until this manager has measured a plan's rate
ASSUMED_PACE = Pace(ASSUMED_MOVE_BYTES_PER_S, rate_measured=False)


@dataclass(frozen=True)
class Scenario:
    kind: ScenarioKind
    name: str
    brokers: tuple[int, ...]


@dataclass(frozen=True)
class Verdict:
    scenario: Scenario
    healable: bool
    outcome: str
    summary: str
    why: tuple[Reason, ...]  # a refusal's reasons, or the partitions a partial heal leaves
    bytes_to_copy: int
    moves: int
    busiest_after: tuple[int, float] | None  # (broker, network utilisation) after the heal
    heal_s: float | None = None  # estimated loss to fully replicated; None: nothing is healed
    # The same if its host is lost with it (its agent silent: healed without the grace,
    # manager.model.death); None: nothing is healed, or policy.wait_or_heal.early_heal is off.
    host_lost_heal_s: float | None = None

    @property
    def standing(self) -> Standing:
        if self.healable:
            return "healable"
        return "at_risk" if any(r.code in RISK_CODES for r in self.why) else "left_to_operator"

    @property
    def at_risk(self) -> bool:
        return self.standing == "at_risk"

    def to_dict(self) -> dict[str, Any]:
        """As `kmedic readiness --json` prints it and the audit log records it."""
        busiest = self.busiest_after
        return {
            "scenario": self.scenario.kind,
            "name": self.scenario.name,
            "brokers": list(self.scenario.brokers),
            "healable": self.healable,
            "standing": self.standing,
            "outcome": self.outcome,
            "summary": self.summary,
            "sentence": self.sentence(),
            "why": [r.to_dict() for r in self.why],
            "bytes_to_copy": self.bytes_to_copy,
            "moves": self.moves,
            "heal_s": None if self.heal_s is None else round(self.heal_s, 1),
            "host_lost_heal_s": (
                None if self.host_lost_heal_s is None else round(self.host_lost_heal_s, 1)
            ),
            "busiest_after": (
                {"broker": busiest[0], "network_util": round(busiest[1], 3)} if busiest else None
            ),
        }

    def sentence(self) -> str:
        s = self.scenario
        lost = f"losing {s.kind} {s.name}" + (
            f" (brokers {list(s.brokers)})" if s.kind != "broker" else ""
        )
        if self.healable:
            took = f", about {duration(self.heal_s)} to fully replicated" if self.heal_s else ""
            if self.heal_s and self.host_lost_heal_s is not None:
                took += (
                    f" ({duration(self.host_lost_heal_s)} after its agent's next record is "
                    "missed, if its host is lost with it)"
                )
            return (
                f"{lost}: healable, {self.moves} moves, {self.bytes_to_copy / 1e6:.0f} MB to copy"
                f"{took}"
            )
        first = self.why[0].message if self.why else self.summary
        more = f" (+{len(self.why) - 1} more)" if len(self.why) > 1 else ""
        if not self.at_risk:
            return f"{lost}: left to an operator by policy: {first}{more}"
        return f"{lost}: NOT healable: {first}{more}"


def scenarios(snap: Snapshot) -> list[Scenario]:
    """Every live broker; every rack and configured failure domain with a live broker."""
    live = [b for b in snap.brokers if b.alive]
    out = [Scenario("broker", str(b.id), (b.id,)) for b in live]
    racks: dict[str, list[int]] = {}
    for b in live:
        racks.setdefault(location_of(b.rack, snap.policy.placement).rack, []).append(b.id)
    out += [Scenario("rack", r, tuple(ids)) for r, ids in sorted(racks.items()) if len(racks) > 1]
    alive = {b.id for b in live}
    for domain in snap.failure_domains:
        ids = tuple(b for b in domain.brokers if b in alive)
        if ids:
            out.append(Scenario("domain", domain.name, ids))
    return out


def settled(snap: Snapshot) -> Snapshot:
    """The snapshot as it will be once kmedic's own moves are done: each partition kmedic is
    reassigning on its target replicas (the removed ones gone, the added ones in sync), and
    its reassignments no longer listed. Other people's reassignments stay: they hold a heal
    back on the day too. The table is built anew, once a sweep, as the base of its losses."""
    own = [r for r in snap.reassignments if r.started_by_kmedic]
    if not own:
        return snap
    table = topics_table(snap.topics)
    replicas: dict[int, tuple[int, ...]] = {}
    isr: dict[int, tuple[int, ...]] = {}
    offline: dict[int, tuple[int, ...]] = {}
    leader = table.leader.astype(np.int64)
    for r in own:
        row = table.row_of(r.topic, r.partition)
        if row is None:
            continue
        gone = set(r.removing_replicas)
        kept = tuple(b for b in table.replicas.row(row) if b not in gone)
        replicas[row] = kept
        synced = [b for b in table.isr.row(row) if b not in gone]
        isr[row] = tuple(dict.fromkeys([*synced, *(b for b in r.adding_replicas if b in kept)]))
        offline[row] = tuple(b for b in table.offline.row(row) if b not in gone)
        if leader[row] in gone or leader[row] < 0:
            leader[row] = isr[row][0] if isr[row] else -1
    rebuilt = dataclasses.replace(
        table,
        leader=leader.astype(table.leader.dtype),
        replicas=table.replicas.with_rows(replicas),
        isr=table.isr.with_rows(isr),
        offline=table.offline.with_rows(offline),
    )
    others = tuple(r for r in snap.reassignments if not r.started_by_kmedic)
    return snap.model_copy(update={"topics": Topics(rebuilt), "reassignments": others})


def killed(snap: Snapshot, dead: tuple[int, ...]) -> Snapshot:
    """The snapshot as the leader would see it once ``dead`` died and their grace ran out, the
    hour before it with no move done (the hourly budget is judged for the heal alone)."""
    gone = set(dead)
    since = snap.taken_at - snap.policy.dead_grace_ms - 1
    brokers = tuple(
        b.model_copy(update={"alive": False, "dead_since_ms": since, "returned_at_ms": None})
        if b.id in gone
        else b
        for b in snap.brokers
    )
    alive = {b.id for b in brokers if b.alive}
    topics = _without(Topics(topics_table(snap.topics)), gone, alive)
    leading = Leadership(
        holder=snap.leadership.holder,
        epoch=snap.leadership.current_epoch,
        current_epoch=snap.leadership.current_epoch,
        is_leader=True,
    )
    update = {"brokers": brokers, "topics": topics, "leadership": leading}
    return snap.model_copy(update={**update, "recent_actions": RecentActions()})


def _without(topics: Topics, gone: set[int], alive: set[int]) -> Topics:
    """The partitions with replicas on ``gone``: those out of the ISR, led by the next in-sync
    replica (or offline), and listed offline. Only their rows are rewritten, column by column:
    a broker's loss touches a few thousand rows of a fleet's 433,000, a rack's a third."""
    table = topics.table
    rows = table.replicas.rows_with(gone)
    isr = table.isr.take(rows).without(gone)
    leader = table.leader[rows].astype(np.int64)
    leader = np.where(np.isin(leader, list(gone)), isr.firsts(), leader)
    if table.eligible is not None:
        # KIP-966: with its last in-sync replica gone, Kafka elects a live eligible leader
        # replica, which holds every committed record: no unclean election, nothing lost.
        eligible = table.eligible.take(rows)
        elected: dict[int, tuple[int, ...]] = {}
        for j in np.flatnonzero((leader < 0) & (eligible.counts() > 0)).tolist():
            live = [b for b in eligible.row(j) if b in alive]
            if live:
                leader[j], elected[j] = live[0], (live[0],)
        isr = isr.with_rows(elected)
    offline = table.offline.take(rows).union(table.replicas.take(rows).only(gone))
    leaders = table.leader.copy()
    leaders[rows] = leader
    return Topics(
        dataclasses.replace(
            table,
            leader=leaders,
            isr=table.isr.replace_rows(rows, isr),
            offline=table.offline.replace_rows(rows, offline),
        ),
        derived=Derived(table, tuple(rows.tolist())),
    )


def verdict(
    snap: Snapshot,
    scenario: Scenario,
    pace: Pace = ASSUMED_PACE,
    plan: Callable[[Snapshot], Decision] = decide,
) -> Verdict:
    dead = killed(snap, scenario.brokers)
    decision = plan(dead)
    full_heal = decision.outcome == "act" and decision.kind == "heal" and not decision.unhealed
    nothing_to_do = decision.outcome == "noop"
    held = decision.outcome in ("refuse", "wait")
    why = decision.unhealed or (decision.reasons if held else ())
    after = decision.loads_after
    busiest = max(after.items(), key=lambda kv: kv[1].network_util, default=None)
    return Verdict(
        scenario,
        healable=(full_heal or nothing_to_do) and decision.would_act is None,
        outcome=decision.outcome,
        summary=decision.summary,
        why=tuple(why),
        bytes_to_copy=decision.bytes_to_move,
        moves=len(decision.actions),
        busiest_after=(busiest[0], busiest[1].network_util) if busiest else None,
        heal_s=heal_seconds(dead, decision.actions, pace) if decision.outcome == "act" else None,
        host_lost_heal_s=(
            host_lost_heal_seconds(dead, decision.actions, pace)
            if decision.outcome == "act" and dead.policy.wait_or_heal.early_heal
            else None
        ),
    )


def sweep(snap: Snapshot, pace: Pace = ASSUMED_PACE) -> list[Verdict]:
    """Every scenario's verdict, brokers first, then racks and domains, on the cluster as it
    will be once kmedic's own moves are done."""
    base = settled(snap)
    return [verdict(base, s, pace) for s in scenarios(base)]
