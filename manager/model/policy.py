"""The policy a snapshot is judged by: placement, limits, grace periods, budgets, and one
switch per capability of the planner (docs/snapshot.md, "Policy"). Set in the manager config
(``policy:``) and carried in every snapshot; frozen, unknown fields rejected."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from manager.model.slowness import SlowBrokerPolicy

PlacementKind = Literal["rack", "region", "zone"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class WaitOrHeal(_Frozen):
    """When a dead broker's agent evidence replaces the grace timer (manager.model.death)."""

    early_heal: bool = Field(
        default=True,
        description="heal a crash-looping broker, or one whose host is lost, without waiting out "
        "its grace; off: the timer alone shortens nothing",
    )
    host_lost_confirm_ms: int = Field(
        default=10_000,
        ge=0,
        description="how long a fenced broker's agent must be silent past the next record it "
        "promised (its interval_s) before its host counts as lost",
    )
    crash_loop_restarts: int = Field(
        default=3,
        ge=1,
        description="times it came back and died again within its agent's restart window "
        "(10 minutes) that make a crash loop",
    )
    restart_stall_ms: int = Field(
        default=120_000,
        gt=0,
        description="a start (log recovery) that has not moved forward for this long is no "
        "longer evidence of a restart",
    )
    restart_wait_cap_ms: int = Field(
        default=1_800_000,
        ge=0,
        description="how long after its death a restarting broker that keeps moving forward is "
        "waited for, its write-unavailable partitions too; 0: no longer than the timer",
    )


class Limits(_Frozen):
    network_in_fraction: float = Field(default=0.8, gt=0, le=1)
    network_out_fraction: float = Field(default=0.8, gt=0, le=1)
    disk_fraction: float = Field(default=0.85, gt=0, le=1)


class GoalSwitches(_Frozen):
    """One switch per capability (docs/planner.md, "Goals"), every one with one contract: a
    goal switched off is still decided every cycle; a decision it would act on is audited as
    ``would_act``, disabled by its switch, counted, and nothing it planned is carried out (nor
    anything after it that cycle - except after a goal that only tidies a calm cluster:
    ``repair_placement`` and ``even_spread`` hold back nothing, and nothing needs them, so
    they are never alerted)."""

    heal_dead_brokers: bool = Field(
        default=True, description="move the replicas of brokers dead past their grace period"
    )
    heal_failed_disks: bool = Field(
        default=True, description="move replicas offline on a live broker (a failed log dir)"
    )
    operator_requests: bool = Field(
        default=True, description="carry out drain, fill and demote requests"
    )
    balance: bool = Field(default=True, description="shed load from brokers over their limits")
    leadership_moves: bool = Field(
        default=True,
        description="plans that move leadership (balance, demote, even network load)",
    )
    slow_brokers: bool = Field(
        default=True,
        description="leadership off slow brokers, and back once they recover (a drain only "
        "with policy.slow_brokers.drain)",
    )
    repair_placement: bool = Field(
        default=False,
        description="move replicas that break the placement policy as it is (two in one rack "
        "although enough racks are live, a topic outside its isolation group), on a calm "
        "cluster",
    )
    even_spread: bool = Field(
        default=True,
        description="balance an uneven cluster (a new empty broker, say) even when no broker "
        "is over a limit; only on a calm cluster (no heal, recovery window or degraded mode)",
    )
    rejoin_leadership: bool = Field(
        default=True,
        description="preferred leadership back to a broker that came back, once its replicas "
        "are in sync (policy.rejoin), in batches, internal topics last",
    )


# Switches that were flags of the policy itself before: still read from there.
_FORMER_POLICY_FLAGS: frozenset[str] = frozenset({"repair_placement", "even_spread"})


class RejoinPolicy(_Frozen):
    """When a broker that came back (within ``recovery_window_ms``) leads again
    (docs/planner.md, "Rejoin"). Kafka's own ``auto.leader.rebalance.enable`` hands leadership
    back as soon as its periodic check finds the broker in sync; with it off, kmedic paces it."""

    in_sync_share: float = Field(
        default=0.95,
        gt=0,
        le=1,
        description="the share of the broker's replicas in their ISR before any leadership "
        "returns to it",
    )
    leaders_per_cycle: int = Field(
        default=50, ge=1, description="preferred leaderships handed back per cycle, at most"
    )
    throttle_catch_up: bool = Field(
        default=True,
        description="the broker's copies back into its replicas outside the ISR are throttled "
        "as a move's copy is (executor.throttle_bytes_per_s), in act mode, until in sync",
    )


class Policy(_Frozen):
    placement: PlacementKind = "rack"
    min_replication_factor: int = Field(
        default=2,
        ge=1,
        description="a topic with fewer replicas is unsafe: its first broker loss is an outage",
    )
    enforce_min_racks: bool = False
    min_racks: int = Field(default=2, ge=1)
    prefer_emptier_disks: bool = False
    limits: Limits = Limits()
    max_replicas_per_broker: int | None = Field(default=None, ge=1)
    balance_threshold: float = Field(
        default=1.10, ge=1.0, description="busiest broker's network load / cluster average"
    )
    even_spread_threshold: float = Field(
        default=1.20,
        ge=1.0,
        description="a broker's disk share, replica count or network share above this x the "
        "average, or below the average / this, is uneven (docs/planner.md, 'Even spread')",
    )
    dead_grace_ms: int = Field(default=600_000, ge=0)
    write_unavailable_grace_ms: int = Field(
        default=60_000,
        ge=0,
        description="the shorter grace of a partition whose live in-sync replicas fell below "
        "its topic's min.insync.replicas with a dead broker (acks=all writes to it fail): its "
        "lost replicas are healed after this, the broker's other replicas after "
        "dead_grace_ms; at dead_grace_ms or more, no partition is healed early",
    )
    recovery_window_ms: int = Field(
        default=1_800_000,
        ge=0,
        description="how long after a broker comes back its replicas outside the ISR count as "
        "catching up (explained), not as unexplained under-replication",
    )
    wait_or_heal: WaitOrHeal = WaitOrHeal()
    max_dead_brokers: int = Field(default=2, ge=0)
    max_dead_fraction: float = Field(default=0.25, ge=0, le=1)
    max_failed_disk_brokers: int = Field(
        default=1,
        ge=0,
        description="live brokers with offline replicas (a failed log directory) the heal "
        "takes on at once; more looks systemic (a bad deploy, a shared volume) and is refused",
    )
    min_valid_load_fraction: float = Field(default=0.9, ge=0, le=1)
    max_stats_age_ms: int = Field(default=300_000, ge=0)
    # Sized for a medium cluster (docs/planner.md, "Move budgets"): one plan may heal the
    # largest dead-broker count allowed; an hour allows two such heals, and no more.
    max_moves_per_cycle: int = Field(default=2_000, ge=0)
    max_moves_per_hour: int = Field(default=4_000, ge=0)
    goals: GoalSwitches = GoalSwitches()
    slow_brokers: SlowBrokerPolicy = SlowBrokerPolicy()
    rejoin: RejoinPolicy = RejoinPolicy()

    @model_validator(mode="before")
    @classmethod
    def _switches_of_old(cls, raw: Any) -> Any:
        """``policy.even_spread`` and ``policy.repair_placement``, as configs wrote them before
        they became switches, are read as ``policy.goals.<name>``."""
        if not isinstance(raw, dict) or not _FORMER_POLICY_FLAGS & raw.keys():
            return raw
        out = dict(raw)
        goals = dict(out.get("goals") or {})
        for name in sorted(_FORMER_POLICY_FLAGS & raw.keys()):
            if name in goals:
                raise ValueError(
                    f"{name} is set twice, as policy.{name} and as policy.goals.{name}: keep "
                    f"policy.goals.{name}"
                )
            goals[name] = out.pop(name)
        out["goals"] = goals
        return out
