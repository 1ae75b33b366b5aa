"""Every reason code a decision can give: one typed list, and what each means.

``ReasonCode`` is the list (mypy rejects a ``Reason`` with any other code); ``REASON_CODES``
says, for each, the outcome it comes with and when. The table in docs/planner.md is generated
from it (``python -m manager.model.reasons``) and a test fails when the two disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ReasonCode = Literal[
    # gates: each refuses (authority gates only when there is something to do)
    "not_leader",
    "stale_fencing_epoch",
    "quorum_without_leader",
    "too_many_dead_brokers",
    "too_many_failed_disks",
    "dead_within_grace",
    "domain_in_maintenance",
    "unexplained_under_replication",
    "stale_load_data",
    "foreign_reassignment_in_progress",
    "plan_violates_constraints",
    "no_live_replica",
    "action_budget_exceeded",
    "hourly_budget_exceeded",
    "balance_infeasible",
    # the daemon's own situation
    "degraded_mode",
    "cluster_unobservable",
    "coordination_unreachable",
    "stale_metadata",
    # explanations on act and noop
    "own_reassignment_in_progress",
    "broker_dead",
    "writes_unavailable",
    "log_dir_failed",
    "heal_without_loads",
    "heal_exact_placement",
    "over_limit",
    "limits_unresolved",
    "budget_truncated",
    "placement_violation",
    "placement_repair",
    "uneven_spread",
    "operator_request",
    "slow_broker",
    "broker_rejoined",
]

Outcomes = Literal["refuse", "wait", "act", "noop", "act, noop", "act, noop, refuse"]


@dataclass(frozen=True)
class CodeDoc:
    outcome: Outcomes
    when: str


REASON_CODES: dict[ReasonCode, CodeDoc] = {
    "not_leader": CodeDoc("refuse", "this instance does not hold leadership"),
    "stale_fencing_epoch": CodeDoc("refuse", "its epoch is older than ZooKeeper's current epoch"),
    "quorum_without_leader": CodeDoc(
        "refuse",
        "the KRaft controller quorum has no leader: nothing can be committed (no reassignment, "
        "election or fencing), so no move starts",
    ),
    "too_many_dead_brokers": CodeDoc(
        "refuse",
        "dead brokers > `max_dead_brokers` or > `max_dead_fraction` (a wait while the count "
        "is over only by brokers still inside `dead_grace_ms`)",
    ),
    "too_many_failed_disks": CodeDoc(
        "refuse",
        "live brokers with offline replicas (a failed log directory) > "
        "`max_failed_disk_brokers`: that looks systemic, not a disk failure",
    ),
    "dead_within_grace": CodeDoc(
        "wait",
        "a dead broker has been dead less than `dead_grace_ms` (a refusal when another gate "
        "fails too)",
    ),
    "domain_in_maintenance": CodeDoc(
        "refuse", "a dead broker is in a failure domain under maintenance"
    ),
    "unexplained_under_replication": CodeDoc(
        "refuse",
        "a partition is under-replicated or offline while the replicas missing from its ISR "
        "are alive (not being added by a reassignment, nor on a broker that came back within "
        "`recovery_window_ms` or one scored slow)",
    ),
    "stale_load_data": CodeDoc(
        "refuse",
        "valid load windows < `min_valid_load_fraction`, or a live broker's stats are older "
        "than `max_stats_age_ms`",
    ),
    "foreign_reassignment_in_progress": CodeDoc(
        "refuse",
        "a partition the plan needs is being reassigned by someone else (named; the rest of a "
        "heal goes ahead, and no plan touches its partitions or the brokers it adds or removes)",
    ),
    "plan_violates_constraints": CodeDoc(
        "refuse",
        "a replica has no eligible target, or the placement check finds a violated hard "
        "constraint in the plan",
    ),
    "no_live_replica": CodeDoc("refuse", "a partition to heal has no live leader"),
    "action_budget_exceeded": CodeDoc(
        "refuse", "the plan needs more moves than `max_moves_per_cycle`"
    ),
    "hourly_budget_exceeded": CodeDoc(
        "refuse",
        "the moves of the last hour plus the plan's exceed `max_moves_per_hour` (a runaway or "
        "a bad hour: a person should look)",
    ),
    "balance_infeasible": CodeDoc(
        "refuse", "brokers are over limits and no move helps within the constraints"
    ),
    "degraded_mode": CodeDoc(
        "refuse",
        "a balance while the audit log is on its failover sink or ZooKeeper is unreliable "
        "(heals still act)",
    ),
    "cluster_unobservable": CodeDoc(
        "refuse", "the cycle could not read the cluster (Admin API) or ZooKeeper"
    ),
    "coordination_unreachable": CodeDoc(
        "refuse",
        "ZooKeeper was unreachable, so no instance could prove it leads; audited once it is back "
        "by the instance that leads then, with how long nothing was done",
    ),
    "stale_metadata": CodeDoc(
        "wait",
        "the cluster metadata still shows replica sets older than moves kmedic saw complete "
        "within the settle bound (a broker's metadata cache lags the controller): decided on "
        "no further, read again next cycle",
    ),
    "own_reassignment_in_progress": CodeDoc(
        "noop", "a reassignment kmedic started is still running"
    ),
    "broker_dead": CodeDoc("act", "a broker is dead past its grace period; its replicas move"),
    "writes_unavailable": CodeDoc(
        "act",
        "partitions with fewer live in-sync replicas than their topic's min.insync.replicas "
        "(acks=all writes fail) lost replicas with a broker still in its grace period: those "
        "replicas move after `write_unavailable_grace_ms`, the broker's others wait",
    ),
    "log_dir_failed": CodeDoc(
        "act",
        "a live broker lost a log directory: Kafka reports its replicas there offline; they "
        "move to other brokers at once (no grace: a failed directory comes back only with a "
        "restart)",
    ),
    "heal_without_loads": CodeDoc(
        "act",
        "a heal planned while the loads are stale or missing: replicas placed by partition "
        "size (the agents' log sizes) and replica count, every constraint held; balancing "
        "still waits for fresh loads",
    ),
    "heal_exact_placement": CodeDoc(
        "act",
        "placing replicas one at a time would have refused or repeated a rack (or left an "
        "isolation group's primary brokers); an exact search over the whole heal found a "
        "placement that holds every constraint, and the message compares the two",
    ),
    "over_limit": CodeDoc("act", "a broker is over its network or disk limit"),
    "limits_unresolved": CodeDoc(
        "act", "a broker stays over a limit after the plan (the budget or constraints stop it)"
    ),
    "budget_truncated": CodeDoc("act", "the plan stops at the move budget"),
    "placement_violation": CodeDoc(
        "act, noop", "the existing placement breaks the policy (count and examples)"
    ),
    "placement_repair": CodeDoc(
        "act",
        "with `repair_placement` on, a partition breaking the placement policy as it is gets "
        "one replica moved where the policy wants it (the violation, in its words)",
    ),
    "uneven_spread": CodeDoc(
        "act, noop",
        "no broker is over a limit, but one's disk share, replica count or network share is "
        "outside `even_spread_threshold` x the average (a new empty broker, say): the plan "
        "evens it out, or the noop says why it cannot",
    ),
    "operator_request": CodeDoc(
        "act, noop, refuse",
        "the decision serves an operator's drain, fill, demote, decommission or set-rf request "
        "(its id, what it moves, or that it is done; on a refusal the gates that stop it follow)",
    ),
    "slow_broker": CodeDoc(
        "act",
        "a live broker is slow (its score and the figures behind it): its leadership moves "
        "off, no data; once it has recovered for `policy.slow_brokers.recover_ms` its share "
        "returns; with `policy.slow_brokers.drain` a broker slow that long is drained",
    ),
    "broker_rejoined": CodeDoc(
        "act, noop",
        "a broker that came back has `policy.rejoin.in_sync_share` of its replicas in sync "
        "(the figures): its preferred leadership returns, `policy.rejoin.leaders_per_cycle` at "
        "a time, internal topics last; on a noop, how far a broker still catching up is",
    ),
}

AUTHORITY_CODES: frozenset[ReasonCode] = frozenset({"not_leader", "stale_fencing_epoch"})


def markdown_table() -> str:
    """The reason-code table of docs/planner.md."""
    rows = ["| code | outcome | when |", "| --- | --- | --- |"]
    rows += [f"| `{code}` | {doc.outcome} | {doc.when} |" for code, doc in REASON_CODES.items()]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(markdown_table(), end="")
