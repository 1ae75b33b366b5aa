"""From one cycle's raw observations to the immutable Snapshot the planner decides on.

Pure: the I/O that gathers an ``Observation`` lives in ``manager.monitor.sources``. Keeping the
translation apart means the rules that matter most — when a broker counts as dead, which
load data counts as valid — are tested without a cluster.

A broker is dead when it is absent from the cluster metadata *and* its agent has sent no
healthy BrokerStats since; it has been dead since the later of the two moments. Either signal
alone is not enough: a broker missing from metadata whose agent still reports healthy samples
is a metadata hiccup or a network partition, not a death.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kmedic.brokerstats import BrokerStats, Nic
from kmedic.kafka_admin import ReplicationTiming
from manager.model.policy import Policy
from manager.model.replication_settings import ReplicationSettings
from manager.model.slowness import BrokerLatency
from manager.model.snapshot import (
    AntiAffinityGroup,
    Broker,
    BrokerGroup,
    Capacity,
    CapacitySource,
    FailureDomain,
    IsolationGroup,
    OperatorRequest,
    RecentActions,
    Snapshot,
)
from manager.model.snapshot import Reassignment as SnapReassignment
from manager.monitor.carried import NOTHING, Carried, in_flight_listed, stalled_marked
from manager.monitor.dead_class import classify
from manager.monitor.last_logs import offline_partitions
from manager.monitor.observation import AgentView, Observation
from manager.monitor.partition_columns import snapshot_topics

UNKNOWN_DISK_BYTES = 2**62


class CapacitySettings(BaseModel):
    """Per-broker capacity as configured; limits are fractions of it (see Policy.limits)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    network_in_bytes_per_s: float = Field(default=125_000_000, gt=0, description="1 Gbit/s")
    network_out_bytes_per_s: float = Field(default=125_000_000, gt=0)
    disk_bytes: int | None = Field(
        default=None, gt=0, description="None: discovered from each broker's log dirs"
    )

    @property
    def network_configured(self) -> bool:
        """Set in the config; otherwise each agent's link speed, else the 1 Gbit/s default."""
        return bool({"network_in_bytes_per_s", "network_out_bytes_per_s"} & self.model_fields_set)


def known_brokers(obs: Observation) -> list[int]:
    ids = set(obs.live) | set(obs.agents) | set(obs.first_absent_ms)
    ids.update(np.unique(obs.partitions.replicas.values).tolist())
    for r in obs.reassignments.values():
        ids.update(r.replicas)
    return sorted(i for i in ids if i >= 0)


def dead_since(obs: Observation, broker: int) -> int | None:
    """The one rule of a death: since when ``broker`` is dead, or None while it is alive.

    A broker is dead only once it is absent from the cluster's metadata (DescribeCluster: not
    registered, or fenced); its agent's records alone never kill it. It is dead since the later
    of the two signals: when the manager first saw it absent, and its agent's newest healthy
    stats (a broker that kept sending healthy stats after it left the metadata is dead from
    the last of them). The snapshot's Broker carries the verdict with both signals
    (``alive``, ``dead_since_ms``, ``last_stats_ms``; ``Broker.death_evidence`` words them)."""
    if broker in obs.live:
        return None
    absent_since = obs.first_absent_ms.get(broker, obs.taken_at_ms)
    agent = obs.agents.get(broker)
    if agent is None or agent.last_healthy_ms is None:
        return absent_since
    return max(absent_since, agent.last_healthy_ms)


def _disk_used(stats: BrokerStats | None) -> int | None:
    if stats is None or not stats.log_dirs:
        return None
    used = [
        d.total_bytes - d.free_bytes
        for d in stats.log_dirs
        if d.total_bytes is not None and d.free_bytes is not None
    ]
    return sum(used) if used else None


def _log_dir_total(stats: BrokerStats | None) -> int | None:
    if stats is None:
        return None
    totals = [d.total_bytes for d in stats.log_dirs if d.total_bytes]
    return sum(totals) if totals else None


def _broker(
    b: int, obs: Observation, capacity: CapacitySettings, default: Capacity, policy: Policy
) -> Broker:
    agent = obs.agents.get(b)
    node = obs.live.get(b)
    rack = (node.rack if node else None) or (agent.latest.rack if agent else None)
    since = dead_since(obs, b)
    death = (
        None
        if since is None
        else classify(
            obs.taken_at_ms,
            obs.first_absent_ms.get(b, obs.taken_at_ms),
            since,
            agent,
            policy.wait_or_heal,
            policy.dead_grace_ms,
        )
    )
    own_capacity, source = broker_capacity(agent, capacity, default)
    return Broker(
        id=b,
        rack=rack or obs.known_racks.get(b),
        alive=since is None,
        last_stats_ms=agent.last_healthy_ms if agent else None,
        dead_since_ms=since,
        returned_at_ms=obs.returned_ms.get(b) if since is None else None,
        shutdown_seen_ms=obs.shutdown_seen_ms.get(b) if since is None else None,
        capacity=own_capacity,
        capacity_source=source,
        disk_used_bytes=_disk_used(agent.healthy if agent else None),
        latency=_latency(agent),
        replication=_replication(obs.replication_settings.get(b)),
        cordoned=_cordoned(agent.healthy if agent else None),
        death=death,
    )


def _replication(timing: ReplicationTiming | None) -> ReplicationSettings | None:
    if timing is None:
        return None
    return ReplicationSettings(
        quota_window_s=timing.quota_window_s,
        fetch_backoff_ms=timing.fetch_backoff_ms,
        fetch_wait_ms=timing.fetch_wait_ms,
    )


def _cordoned(stats: BrokerStats | None) -> bool:
    """Every log directory cordoned (KIP-1066), as its agent last read them: Kafka places no
    new partition on the broker and refuses a reassignment onto it."""
    dirs = stats.log_dirs if stats is not None else []
    return bool(dirs) and all(d.cordoned for d in dirs)


def _latency(agent: AgentView | None) -> BrokerLatency | None:
    """How long the broker took to answer, from its newest record that measured it: a failed
    sample's probes count (reads timing out behind a failing link are the slowest answers),
    else the newest healthy sample's."""
    if agent is None:
        return None
    stats = agent.latest if agent.latest.latency is not None else agent.healthy
    if stats is None or stats.latency is None:
        return None
    latency = stats.latency
    return BrokerLatency(
        sampled_at_ms=stats.timestamp_ms,
        probe_p90_ms=latency.probe_p90_ms,
        produce_local_ms=latency.produce_local_ms,
        log_flush_ms=latency.log_flush_ms,
    )


def broker_capacity(
    agent: AgentView | None, capacity: CapacitySettings, default: Capacity
) -> tuple[Capacity | None, CapacitySource]:
    """A broker's own capacity (None: the default's), and where each figure came from: the
    config first, then what its agent read on its host (the link speed, the log directories'
    file systems), then the default."""
    disk_total = _log_dir_total(agent.healthy if agent else None)
    nic = agent.latest.nic if agent else None
    network = network_source(nic, capacity)
    disk: Literal["config", "log_dirs", "unknown"] = "unknown"
    if capacity.disk_bytes is not None:
        disk = "config"
    elif disk_total is not None:
        disk = "log_dirs"
    interface = nic.interface if network == "agent" and nic is not None else None
    source = CapacitySource(network=network, disk=disk, interface=interface)
    if network != "agent" and disk != "log_dirs":
        return None, source
    link_in, link_out, _ = network_capacity(nic, capacity)
    own = Capacity(
        network_in_bytes_per_s=link_in,
        network_out_bytes_per_s=link_out,
        disk_bytes=disk_total if disk == "log_dirs" and disk_total else default.disk_bytes,
    )
    return own, source


NetworkSource = Literal["config", "agent", "default"]


def network_source(nic: Nic | None, capacity: CapacitySettings) -> NetworkSource:
    """Where a broker's network capacity comes from: the ``capacity:`` section when it sets
    one (the operator's word), else the link speed its agent read (``nic``), else the
    default. The one rule for the snapshot and the adaptive throttle alike."""
    if capacity.network_configured:
        return "config"
    if nic is not None and nic.speed_bytes_per_s:
        return "agent"
    return "default"


def network_capacity(nic: Nic | None, capacity: CapacitySettings) -> tuple[float, float, str]:
    """(in, out bytes/s, where from in words) of a broker's link, by ``network_source``."""
    source = network_source(nic, capacity)
    if source == "agent" and nic is not None and nic.speed_bytes_per_s:
        where = f"its agent's link speed ({nic.interface or 'interface unknown'})"
        return float(nic.speed_bytes_per_s), float(nic.speed_bytes_per_s), where
    where = "the capacity config" if source == "config" else "the default: no link speed"
    return capacity.network_in_bytes_per_s, capacity.network_out_bytes_per_s, where


def default_capacity(obs: Observation, capacity: CapacitySettings) -> Capacity:
    """Configured capacity; an unconfigured disk is the largest one the agents report, and
    with no report at all, unbounded (disk limits cannot be judged without a size)."""
    disk = capacity.disk_bytes
    if disk is None:
        totals = [t for a in obs.agents.values() if (t := _log_dir_total(a.healthy)) is not None]
        disk = max(totals) if totals else UNKNOWN_DISK_BYTES
    return Capacity(
        network_in_bytes_per_s=capacity.network_in_bytes_per_s,
        network_out_bytes_per_s=capacity.network_out_bytes_per_s,
        disk_bytes=disk,
    )


def build_snapshot(
    obs: Observation, policy: Policy, capacity: CapacitySettings, carried: Carried = NOTHING
) -> Snapshot:
    """The cycle's one snapshot: the observation, and what the daemon carries into it
    (manager.monitor.carried); nothing rewrites it afterwards."""
    cfg = obs.placement
    default = default_capacity(obs, capacity)
    topics = snapshot_topics(obs, policy.max_stats_age_ms)
    brokers = tuple(_broker(b, obs, capacity, default, policy) for b in known_brokers(obs))
    brokers = stalled_marked(brokers, carried.stalled)
    if carried.slowness is not None:
        brokers = carried.slowness(brokers, topics, policy, obs.taken_at_ms)
    requests: tuple[OperatorRequest, ...] = ()
    if carried.requests is not None:
        requests, brokers = carried.requests(brokers, topics, policy)
    observed = tuple(
        SnapReassignment(
            topic=t,
            partition=p,
            adding_replicas=r.adding,
            removing_replicas=r.removing,
            started_by_kmedic=(t, p) in obs.own_moves,
        )
        for (t, p), r in sorted(obs.reassignments.items())
    )
    return Snapshot(
        schema_version=1,
        taken_at=obs.taken_at_ms,
        cluster=obs.cluster,
        default_capacity=default,
        brokers=brokers,
        topics=topics,
        reassignments=in_flight_listed(observed, carried.in_flight, topics),
        failure_domains=tuple(
            FailureDomain(name=n, brokers=tuple(d.brokers)) for n, d in sorted(cfg.domains.items())
        ),
        broker_groups=tuple(
            BrokerGroup(name=n, brokers=tuple(g.brokers))
            for n, g in sorted(cfg.broker_groups.items())
        ),
        isolation_groups=tuple(
            IsolationGroup(name=n, topics=tuple(g.topics), primary=g.primary, secondary=g.secondary)
            for n, g in sorted(cfg.isolation_groups.items())
        ),
        anti_affinity_groups=tuple(
            AntiAffinityGroup(name=n, topics=tuple(g.topics))
            for n, g in sorted(cfg.anti_affinity_groups.items())
        ),
        maintenance_domains=tuple(sorted(cfg.maintenance)),
        policy=policy,
        leadership=obs.leadership,
        recent_actions=RecentActions(moves_last_hour=obs.moves_last_hour),
        quorum=obs.quorum,
        kafka_auto_leader_rebalance=obs.kafka_auto_leader_rebalance,
        requests=requests,
        offline_partitions=offline_partitions(obs, lambda b: dead_since(obs, b)),
    )
