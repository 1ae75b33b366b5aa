"""The planner's output: act, noop, wait or refuse, with reasons, ordered actions and predicted
loads. A wait (a dead broker still inside its grace period) is not a refusal: nobody is paged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kmedic.exits import Exit
from manager.model.moves import Move
from manager.model.reasons import ReasonCode

Outcome = Literal["act", "noop", "refuse", "wait"]
PlanKind = Literal["heal", "balance"]


@dataclass(frozen=True, slots=True)
class Reason:
    """A machine-readable code and one sentence a person can read. A ``wait`` reason (a dead
    broker still inside its grace period) holds a decision back without refusing: a decision
    held back by waits alone is a wait, audited and counted, and it pages nobody."""

    code: ReasonCode
    message: str
    wait: bool = False

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class ElectPreferredLeader:
    topic: str
    partition: int
    leader: int
    # The replica list it elects in, preferred leader first: the executor's move for an
    # election alone (a reassignment to the same replicas). Not printed, as a Move's size.
    replicas: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "elect_preferred_leader",
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
        }

    def describe(self) -> str:
        return f"elect preferred leader of {self.topic}:{self.partition}: broker {self.leader}"


Action = Move | ElectPreferredLeader


@dataclass(frozen=True, slots=True)
class BrokerLoad:
    """Predicted load of one broker (bytes/s, bytes, counts) and its network utilisation."""

    network_in: float
    network_out: float
    messages_in: float
    disk_bytes: float
    replicas: int
    leaders: int
    network_util: float

    def to_dict(self) -> dict[str, float | int]:
        return {
            "network_in_bytes_per_s": round(self.network_in, 3),
            "network_out_bytes_per_s": round(self.network_out, 3),
            "messages_in_per_s": round(self.messages_in, 3),
            "disk_bytes": round(self.disk_bytes),
            "replicas": self.replicas,
            "leaders": self.leaders,
            "network_util": round(self.network_util, 6),
        }


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    kind: PlanKind | None
    summary: str
    reasons: tuple[Reason, ...]
    actions: tuple[Action, ...] = ()
    bytes_to_move: int = 0
    loads_before: dict[int, BrokerLoad] = field(default_factory=dict)
    loads_after: dict[int, BrokerLoad] = field(default_factory=dict)
    # Partitions breaking the placement policy that this decision leaves as they are; None
    # when not checked (a heal skips the check to stay fast).
    placement_violations: int | None = None
    # The operator request this decision serves, and whether it found it finished.
    request: str | None = None
    request_done: bool = False
    # A decommission request's brokers, empty and stopped: the daemon unregisters them.
    unregister: tuple[int, ...] = ()
    # The slow brokers an act takes leadership off: the daemon counts each demotion started
    # against policy.slow_brokers.max_demotions.
    demotes_slow: tuple[int, ...] = ()
    # A partial heal's partitions that cannot be healed, each with why: refused and paged
    # while the rest is healed.
    unhealed: tuple[Reason, ...] = ()
    # Set when the planner would act and something stops it from acting (observe mode): why.
    # The actions are kept, for the audit log's ``would_act`` record; nothing carries them out.
    would_act: str | None = None
    # The policy.goals switches that hold this decision back (its goal is switched off): set
    # once by the planner and carried, so alerts and metrics name the switch.
    disabled_by: tuple[str, ...] = ()
    # The plan only tidies a calm cluster (placement repair, even spread): nothing needs it,
    # so a switch that holds it back is audited and counted, never alerted.
    tidying: bool = False
    # A wait decided on no plan: the snapshot contradicts moves the daemon saw complete
    # (manager.analyzer.stale_view). The daemon keeps its alerts and history as they were and
    # audits the wait once; the next read decides.
    view_behind: bool = False

    @property
    def exit_code(self) -> Exit:
        """A refusal is not done; a partial heal is partly done; anything else is done."""
        if self.outcome == "refuse":
            return Exit.NOT_DONE
        return Exit.PARTIAL if self.unhealed else Exit.OK

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "kind": self.kind,
            "summary": self.summary,
            "reasons": [r.to_dict() for r in self.reasons],
            "actions": [a.to_dict() for a in self.actions],
            "bytes_to_move": self.bytes_to_move,
            **({"unhealed": [r.to_dict() for r in self.unhealed]} if self.unhealed else {}),
            "loads": [
                {
                    "broker": b,
                    "before": self.loads_before[b].to_dict(),
                    "after": self.loads_after[b].to_dict(),
                }
                for b in sorted(self.loads_before)
            ],
        }

    def render_text(self, max_actions: int = 100) -> str:
        kind = f" ({self.kind})" if self.kind else ""
        lines = [f"decision: {self.outcome}{kind}: {self.summary}"]
        if self.reasons:
            lines.append("reasons:")
            lines += [f"  {r.code}: {r.message}" for r in self.reasons]
        if self.unhealed:
            lines.append("left unhealed (refused, paged):")
            lines += [f"  {r.code}: {r.message}" for r in self.unhealed]
        if self.actions:
            lines.append(f"actions ({len(self.actions)}, {self.bytes_to_move} bytes to move):")
            lines += [f"  {a.describe()}" for a in self.actions[:max_actions]]
            if len(self.actions) > max_actions:
                lines.append(f"  ... {len(self.actions) - max_actions} more (use --json)")
        changed = [
            b for b in sorted(self.loads_before) if self.loads_before[b] != self.loads_after[b]
        ]
        shown = sorted(self.loads_before) if len(self.loads_before) <= 20 else changed
        if shown:
            lines.append("broker loads (net in / out MB/s, disk GB, replicas), before -> after:")
            for b in shown:
                x, y = self.loads_before[b], self.loads_after[b]
                lines.append(f"  broker {b}: {_fmt(x)} -> {_fmt(y)}")
        if len(shown) < len(self.loads_before):
            lines.append(f"  ({len(self.loads_before) - len(shown)} brokers unchanged)")
        return "\n".join(lines)


def _fmt(load: BrokerLoad) -> str:
    return (
        f"{load.network_in / 1e6:.2f} / {load.network_out / 1e6:.2f}, "
        f"{load.disk_bytes / 1e9:.2f}, {load.replicas}"
    )
