"""The immutable cluster model: one snapshot of a Kafka cluster as the planner sees it.

A snapshot is what the manager builds each cycle from the Admin API (metadata, liveness, log
dirs, ongoing reassignments), the load topics (per-partition load windows) and ZooKeeper
(failure domains, groups, maintenance, policy, leadership). Every model is frozen; unknown
fields are rejected so a typo names itself instead of being ignored. Cross-field checks
(replicas refer to known brokers, rack names fit the placement policy, ...) live in
``manager.model.snapshot_file``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import Field, model_validator

from manager.model.death import Death
from manager.model.frozen import Frozen as _Frozen
from manager.model.last_logs import OfflinePartition
from manager.model.partition_models import INT32_MAX
from manager.model.policy import Policy
from manager.model.replication_settings import ReplicationSettings
from manager.model.slowness import BrokerLatency, Slowness
from manager.model.topics import Topics

SCHEMA_VERSION = 1
# How long a live broker in a controlled shutdown's shape counts as shutting down: Kafka's
# takes a second or two from its first metadata change to the fencing (manager.monitor.shutdowns).
SHUTDOWN_BOUND_MS = 60_000


class Capacity(_Frozen):
    """What one broker can carry; limits are fractions of these (see ``Limits``)."""

    network_in_bytes_per_s: float = Field(gt=0)
    network_out_bytes_per_s: float = Field(gt=0)
    disk_bytes: int = Field(gt=0)


class CapacitySource(_Frozen):
    """Where a broker's capacity figures came from."""

    network: Literal["config", "agent", "default"] = Field(
        description="config: the capacity section; agent: the link speed its agent read on the "
        "broker's host; default: neither (1 Gbit/s)"
    )
    disk: Literal["config", "log_dirs", "unknown"] = Field(
        description="config: the capacity section; log_dirs: its log directories' file systems; "
        "unknown: neither (disk limits cannot be judged)"
    )
    interface: str | None = Field(default=None, description="the agent's interface (agent)")


class Broker(_Frozen):
    id: int = Field(ge=0, le=INT32_MAX)
    rack: str | None = Field(
        default=None, description="broker.rack: '/rack' or '/region/rack' (None: default rack)"
    )
    alive: bool
    last_stats_ms: int | None = Field(
        default=None, ge=0, description="time of the newest stats record from its agent"
    )
    dead_since_ms: int | None = Field(
        default=None, ge=0, description="when the broker was first seen dead (required if dead)"
    )
    returned_at_ms: int | None = Field(
        default=None,
        ge=0,
        description="when a live broker came back after being seen absent: its replicas "
        "outside the ISR are catching up",
    )
    shutdown_seen_ms: int | None = Field(
        default=None,
        ge=0,
        description="when a live broker was first seen in a controlled shutdown's shape "
        "(leading nothing, in no led partition's ISR): its replicas outside the ISR are "
        "leaving, not lagging",
    )
    capacity: Capacity | None = Field(
        default=None, description="overrides the snapshot's default_capacity"
    )
    capacity_source: CapacitySource | None = Field(
        default=None, description="where its capacity came from; None: not recorded"
    )
    disk_used_bytes: int | None = Field(
        default=None, ge=0, description="from the log dirs; None: the sum of its replica sizes"
    )
    stalled_at_ms: int | None = Field(
        default=None,
        ge=0,
        description="when kmedic cancelled a move to it that copied nothing (the progress "
        "watchdog): it receives no new replicas while this is set",
    )
    latency: BrokerLatency | None = Field(
        default=None, description="from its agent; None: no agent reports it"
    )
    slowness: Slowness | None = Field(
        default=None, description="the slow-broker score; None: not judged"
    )
    replication: ReplicationSettings | None = Field(
        default=None,
        description="its static replication settings as read from it (DescribeConfigs); "
        "None: not read",
    )
    cordoned: bool = Field(
        default=False,
        description="it takes no new replica: its agent read every log directory cordoned "
        "(KIP-1066), or a drain or decommission holds it (manager.model.cordons)",
    )
    death: Death | None = Field(
        default=None,
        description="a dead broker's class from its agent's evidence (manager.model.death); "
        "None: alive, or not judged (the timer alone)",
    )

    @property
    def is_slow(self) -> bool:
        """Live and scored slow (manager.analyzer.slowness): demoted, and sent nothing."""
        return self.alive and self.slowness is not None and self.slowness.state == "slow"

    # The grace rule, in one place: a dead broker is healed only once it has been dead for
    # the grace period; a broker dead since an unknown time counts as dead since ``now``. Its
    # class (``death``) may end the grace at once (two witnesses: it is not coming back soon)
    # or hold it while it restarts and moves forward.

    def dead_for_ms(self, now_ms: int) -> int:
        """How long the broker has been dead at ``now_ms`` (0 when alive)."""
        if self.alive:
            return 0
        return now_ms - (self.dead_since_ms if self.dead_since_ms is not None else now_ms)

    def death_evidence(self, now_ms: int) -> str:
        """Why a dead broker counts as dead, in the words the audit records: both signals (the
        monitor calls a broker dead only once it is absent from the cluster's metadata; the
        newest healthy stats of its agent tell since when)."""
        if self.last_stats_ms is None:
            stats = "no healthy stats seen"
        else:
            stats = f"last healthy stats {(now_ms - self.last_stats_ms) / 1000:.0f}s ago"
        told = f"; {self.death.kind}: {self.death.evidence}" if self.death is not None else ""
        return f"broker {self.id}: absent from cluster metadata, {stats}{told}"

    def in_grace(self, now_ms: int, grace_ms: int) -> bool:
        """Dead, but not for ``grace_ms`` yet (nor past its class's hold): kmedic waits for it
        to come back; never when its class says heal now."""
        if self.alive:
            return False
        death = self.death
        if death is not None:
            if death.heal_now:
                return False
            if death.wait_until_ms is not None and now_ms < death.wait_until_ms:
                return True
        return self.dead_for_ms(now_ms) < grace_ms

    def shutting_down(self, now_ms: int) -> bool:
        """Live and in a controlled shutdown's shape, first seen less than SHUTDOWN_BOUND_MS
        ago: the controller took it out of every ISR because it is stopping; a broker that
        lags for another reason and happens to lead nothing is judged again after the bound."""
        return (
            self.alive
            and self.shutdown_seen_ms is not None
            and now_ms - self.shutdown_seen_ms < SHUTDOWN_BOUND_MS
        )

    def grace_ends_ms(self, grace_ms: int) -> int | None:
        """When its grace period ends (None: alive, or dead since an unknown time)."""
        if self.alive or self.dead_since_ms is None:
            return None
        death = self.death
        if death is not None and death.heal_now:
            return self.dead_since_ms
        if death is not None and death.wait_until_ms is not None:
            return max(self.dead_since_ms + grace_ms, death.wait_until_ms)
        return self.dead_since_ms + grace_ms


class Reassignment(_Frozen):
    topic: str
    partition: int = Field(ge=0)
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    started_by_kmedic: bool


class FailureDomain(_Frozen):
    name: str = Field(min_length=1)
    brokers: tuple[int, ...]


class BrokerGroup(_Frozen):
    name: str = Field(min_length=1)
    brokers: tuple[int, ...]


class IsolationGroup(_Frozen):
    """Topics whose replicas may live only on the primary broker group (then the secondary)."""

    name: str = Field(min_length=1)
    topics: tuple[str, ...]
    primary: str
    secondary: str | None = None


class AntiAffinityGroup(_Frozen):
    """Topics spread across failure domains, and evenly across brokers within a domain."""

    name: str = Field(min_length=1)
    topics: tuple[str, ...]


RequestKind = Literal["drain", "fill", "demote", "set_rf", "decommission"]
# Those that take every replica off their brokers.
LEAVING_REQUESTS: frozenset[str] = frozenset({"drain", "decommission"})


def request_subject(
    kind: str, brokers: Sequence[int], topic: str | None, replication_factor: int | None
) -> str:
    """What a request is about: 'drain brokers 4, 5', 'set_rf topic pay to 3'."""
    if kind == "set_rf":
        return f"set_rf topic {topic} to {replication_factor}"
    return f"{kind} brokers {', '.join(map(str, brokers))}"


class OperatorRequest(_Frozen):
    """A request an operator stored (``kmedic drain|fill|demote BROKER...``, ``kmedic topics
    set-rf TOPIC --rf N``) that is not finished yet: the planner serves the oldest one after
    any heal and before any balance."""

    id: str = Field(min_length=1)
    kind: RequestKind
    brokers: tuple[int, ...] = Field(default=(), description="drain, fill and demote: whose")
    topic: str | None = Field(default=None, min_length=1, description="set_rf: the topic")
    replication_factor: int | None = Field(
        default=None, ge=1, description="set_rf: the replication factor wanted"
    )
    created_ms: int = Field(ge=0)
    upheld: bool = Field(
        default=False,
        description="a drain that is done, served again: brokers it holds cordoned hold "
        "replicas again (manager.daemon.requests)",
    )

    @model_validator(mode="after")
    def _what_its_kind_needs(self) -> OperatorRequest:
        if self.kind == "set_rf":
            if self.topic is None or self.replication_factor is None or self.brokers:
                raise ValueError("a set_rf request names a topic and a replication_factor only")
        elif not self.brokers or self.topic is not None or self.replication_factor is not None:
            raise ValueError(f"a {self.kind} request names brokers only")
        return self

    @property
    def subject(self) -> str:
        return request_subject(self.kind, self.brokers, self.topic, self.replication_factor)


class Leadership(_Frozen):
    holder: str = Field(description="manager instance that built this snapshot")
    epoch: int = Field(ge=0, description="fencing epoch this instance holds")
    current_epoch: int = Field(ge=0, description="newest epoch in ZooKeeper")
    is_leader: bool


class RecentActions(_Frozen):
    moves_last_hour: int = Field(default=0, ge=0)


QuorumState = Literal["led", "leaderless", "unknown"]


class QuorumVoter(_Frozen):
    """One voter of the KRaft metadata quorum, as its leader reports it."""

    id: int = Field(ge=0)
    lag: int | None = Field(
        default=None, ge=0, description="records behind the leader's high watermark; None: unknown"
    )
    last_fetch_age_ms: int | None = Field(
        default=None, ge=0, description="since its last fetch from the leader; None: none known"
    )


class Quorum(_Frozen):
    """The KRaft controller quorum (DescribeMetadataQuorum), read each cycle."""

    state: QuorumState = Field(
        description="led; leaderless (no leader answered: nothing can be committed); unknown "
        "(the read failed otherwise: not held against any plan)"
    )
    leader: int | None = None
    voters: tuple[QuorumVoter, ...] = ()
    error: str | None = Field(default=None, description="why the read found no leader")


class Snapshot(_Frozen):
    schema_version: Literal[1]
    taken_at: int = Field(ge=0, description="milliseconds since the epoch")
    cluster: str = Field(min_length=1)
    default_capacity: Capacity | None = None
    brokers: tuple[Broker, ...] = Field(min_length=1)
    topics: Topics = Topics.of(())
    reassignments: tuple[Reassignment, ...] = ()
    failure_domains: tuple[FailureDomain, ...] = ()
    broker_groups: tuple[BrokerGroup, ...] = ()
    isolation_groups: tuple[IsolationGroup, ...] = ()
    anti_affinity_groups: tuple[AntiAffinityGroup, ...] = ()
    maintenance_domains: tuple[str, ...] = ()
    policy: Policy = Policy()
    leadership: Leadership
    recent_actions: RecentActions = RecentActions()
    requests: tuple[OperatorRequest, ...] = Field(
        default=(), description="operator requests not finished yet, oldest first"
    )
    quorum: Quorum | None = Field(default=None, description="None: not read")
    kafka_auto_leader_rebalance: bool | None = Field(
        default=None,
        description="Kafka's own auto.leader.rebalance.enable, as a live broker has it: on, "
        "Kafka hands a returning broker's leadership back itself (None: not read)",
    )
    offline_partitions: tuple[OfflinePartition, ...] = Field(
        default=(),
        description="partitions with no leader and no in-sync or eligible replica alive, each "
        "with its logs as the agents last sampled them (manager.model.last_logs): what "
        "`kmedic recover` weighs",
    )
