"""The manager's inputs, gathered once per cycle into an Observation (the I/O edge).

The Admin API (kafka-python: DescribeCluster, Metadata, ListPartitionReassignments) is read
fresh each cycle; the stats and load topics are tailed in the background (``manager.monitor.feeds``)
and copied at the start of a cycle, so one cycle sees one consistent picture.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from kmedic.errors import Unreachable
from kmedic.forwarders import Forwarders
from kmedic.kafka_admin import (
    connect_admin,
    describe_eligible_leaders,
    describe_partitions,
    steer_requests,
)
from kmedic.kafka_client import Cluster
from kmedic.logging import get_logger
from kmedic.metadata import (
    BrokerNode,
    Reassignment,
    parse_nodes,
    parse_reassignments,
)
from kmedic.partition_table import PartitionTable
from manager.model.placement_config import PlacementConfig
from manager.model.snapshot import Leadership
from manager.monitor.broker_settings import broker_settings
from manager.monitor.feed_pair import FeedPair, Feeds, FeedSpec
from manager.monitor.feed_process import ProcessFeeds
from manager.monitor.feeds import FeedStatus
from manager.monitor.leader_rebalance import LeaderRebalanceSetting
from manager.monitor.observation import AgentView, Observation, TopicPartition
from manager.monitor.offline import OfflineOnLive, confirm_offline, unconfirmed
from manager.monitor.quorum import QuorumReader
from manager.monitor.registrations import RegistrationWatch
from manager.monitor.shutdowns import Shutdowns, shutting_down
from manager.monitor.topic_configs import topic_configs

log = get_logger(__name__)


# Reads per cycle before it is blind: the first two on the same client, the last two each on a
# fresh one. A fresh client bootstraps from a broker picked at random, which for the seconds
# before a dying broker is fenced may be that broker: one fresh client was blind once in 610
# reads in a clean-clone run of tests/integration/test_manager_sources.py; two make it rarer.
ADMIN_ATTEMPTS = 4
SAME_CLIENT_ATTEMPTS = 2
# Offline replicas first seen on a live broker are read again this much later, once
# (manager.monitor.offline): a second read confirms a failed log directory in the same cycle.
OFFLINE_READS = 2
# The registration watch asks four times a second: a dead broker's grace counts from the read
# that first misses it, so the read's period is added to every heal (a DescribeCluster is a
# read of the broker's metadata cache). A request to a hung broker must not hold it long.
WATCH_INTERVAL_S = 0.25
WATCH_TIMEOUT_MS = 1500
OFFLINE_CONFIRM_S = 1.0


class AdminUnavailable(Unreachable):
    """The Admin API could not be read this cycle; the manager takes no action."""


class ClusterSources:
    """Everything a cycle reads, except ZooKeeper (the coordinator and config store own it)."""

    def __init__(
        self,
        *,
        cluster: str,
        bootstrap: Cluster,
        stats_topic: str,
        loads_topic: str,
        stats_lookback_s: float,
        request_timeout_s: float = 4.0,
        feeds: Cluster | None = None,
        feed_process: bool = False,
        avoided: Forwarders | None = None,
    ) -> None:
        """``bootstrap``: the cluster looked after (its Admin reads); ``feeds``: where the
        stats and loads topics are, when elsewhere (the manager's own_topics_bootstrap);
        ``feed_process``: tail them in a child process (manager.monitor.feed_process), not in
        threads of this one; ``avoided``: the brokers a request of this manager waited on and
        failed lately (kmedic.forwarders), shared with its other clients."""
        self.cluster = cluster
        self._bootstrap = bootstrap
        self._timeout_ms = int(request_timeout_s * 1000)
        self._admin: Any = None
        spec = FeedSpec(
            bootstrap if feeds is None else feeds, stats_topic, loads_topic, stats_lookback_s
        )
        self.feeds: Feeds = ProcessFeeds(spec) if feed_process else FeedPair(spec)
        # Memory across cycles: when each broker was first seen missing, and its last rack.
        self.first_absent_ms: dict[int, int] = {}
        self.returned_ms: dict[int, int] = {}
        self.known_racks: dict[int, str] = {}
        # Live brokers in a controlled shutdown, since when (manager.monitor.shutdowns).
        self.shutdowns = Shutdowns()
        # Offline replicas on live brokers at the last read (manager.monitor.offline).
        self.offline_on_live: OfflineOnLive = {}
        # The last observation's wall seconds by stage: the quorum, the Admin reads (offline
        # replicas confirmed), the feeds' copy, and the settings (topic and broker configs,
        # eligible leaders, the registrations' memory).
        self.stages: dict[str, float] = {}
        # Brokers fenced and back between two cycles (manager.monitor.registrations).
        self._watch_admin: Any = None
        self._watch_failures = 0
        self.registrations = RegistrationWatch(self._read_registered, WATCH_INTERVAL_S)
        self.topic_configs = topic_configs()
        self.broker_settings = broker_settings()
        self.leader_rebalance = LeaderRebalanceSetting()
        # Brokers a request timed out on lately, whichever of the manager's clients sent it:
        # the registration watch asks every 0.25 s and is the first to wait on a broker cut
        # off the network; the executor's next read sent there held a cycle 30 s (its
        # request timeout) and a lost host's heal with it (bench_oracle, cut_host).
        self.avoided = avoided if avoided is not None else Forwarders()
        self.quorum = QuorumReader(bootstrap, forwarders=self.avoided)
        self._reassignments: dict[TopicPartition, Reassignment] = {}  # the last listing

    def start(self, on_registrations: Callable[[], None] = lambda: None) -> ClusterSources:
        """The feeds and the registration watch; ``on_registrations``: a broker fenced or back
        between two cycles."""
        self.feeds.start()
        self.registrations.start(on_registrations)
        return self

    def stop(self) -> None:
        self.feeds.stop()
        self.registrations.stop()
        self.stop_admin_clients()

    def stop_admin_clients(self) -> None:
        self._close_admin()
        self.quorum.close()
        if self._watch_admin is not None:
            with contextlib.suppress(Exception):
                self._watch_admin.close()
            self._watch_admin = None

    def _read_registered(self) -> frozenset[int]:
        """The unfenced brokers, on a client of the registration watch's own (its thread)."""
        if self._watch_admin is None:
            self._watch_admin = connect_admin(
                self._bootstrap,
                client_id="kmedic-manager-registrations",
                timeout_ms=WATCH_TIMEOUT_MS,
                error=AdminUnavailable,
            )
            # It avoids a broker another client waited on, and tells them of one it waited on.
            steer_requests(self._watch_admin, self.avoided)
        try:
            nodes = parse_nodes(self._watch_admin.describe_cluster())
        except Exception:
            # Asked again at the next read on the same client, whose backoff then skips a hung or
            # dead broker; a fresh client (its bootstrap may pick that broker again) only
            # after several failures in a row.
            self._watch_failures += 1
            if self._watch_failures >= SAME_CLIENT_ATTEMPTS + 1:
                with contextlib.suppress(Exception):
                    self._watch_admin.close()
                self._watch_admin = None
                self._watch_failures = 0
            raise
        self._watch_failures = 0
        registered = frozenset(b for b, n in nodes.items() if not n.fenced)
        self.avoided.registered = registered  # every client's requests leave a fenced broker
        return registered

    def feed_status(self) -> list[FeedStatus]:
        return self.feeds.status()

    def _client(self) -> Any:
        if self._admin is None:
            self._admin = connect_admin(
                self._bootstrap,
                client_id="kmedic-manager",
                timeout_ms=self._timeout_ms,
                error=AdminUnavailable,
            )
            # A broker a request timed out on is avoided by the requests that name none.
            steer_requests(self._admin, self.avoided)
        return self._admin

    def _close_admin(self) -> None:
        if self._admin is not None:
            # Closing a broken client must not mask the real error.
            with contextlib.suppress(Exception):
                self._admin.close()
            self._admin = None

    def observe(
        self,
        now_ms: int,
        *,
        placement: PlacementConfig,
        leadership: Leadership,
        own_moves: frozenset[TopicPartition],
        moves_last_hour: int,
        retired: frozenset[int] = frozenset(),
    ) -> Observation:
        # First: without a quorum leader the reassignments cannot be listed (the request
        # waits for the controller) and cannot change either; the last listing stands.
        clock = time.monotonic
        began = clock()
        quorum = self.quorum.read(now_ms)
        read_at = clock()
        leaderless = quorum.state == "leaderless"
        for _ in range(OFFLINE_READS):
            live, raw, reassignments = self._read_admin(list_reassignments=not leaderless)
            previous = self.offline_on_live
            partitions, self.offline_on_live = confirm_offline(raw, set(live), previous)
            if not unconfirmed(self.offline_on_live, previous):
                break
            time.sleep(OFFLINE_CONFIRM_S)  # a fencing settles; a failed directory stays
        copy_at = clock()
        copy = self.feeds.take()
        copied_at = clock()
        agents, loads = copy.agents, copy.loads
        replica_ids = set(np.unique(partitions.replicas.values).tolist())
        returns, away = self.registrations.take()
        agents = {b: v for b, v in agents.items() if b in live or b not in retired}
        for b in retired - set(live):  # unregistered by a decommission: gone, not dead
            self.first_absent_ms.pop(b, None)
            self.known_racks.pop(b, None)
        self._remember(now_ms, live, agents, replica_ids, returns, away)
        leaving = self.shutdowns.saw(shutting_down(partitions, live), now_ms)
        topics = {partitions.names[t] for t in np.unique(partitions.topic).tolist()}
        # On the client that has just read the cluster (none: the settings are unknown).
        min_insync = self.topic_configs.read(self._admin, topics) if self._admin else {}
        rebalance = self.leader_rebalance.read(self._admin, live) if self._admin else None
        settings = self.broker_settings.read(self._admin, set(live)) if self._admin else {}
        eligible = self._eligible_leaders(partitions, min_insync)
        done = clock()
        self.stages = {
            "quorum": read_at - began,
            "admin": copy_at - read_at,
            "feeds": copied_at - copy_at,
            "settings": done - copied_at,
        }
        return Observation(
            taken_at_ms=now_ms,
            cluster=self.cluster,
            live=live,
            partitions=partitions,
            reassignments=reassignments,
            agents=agents,
            loads=loads,
            placement=placement,
            leadership=leadership,
            own_moves=own_moves,
            moves_last_hour=moves_last_hour,
            first_absent_ms=dict(self.first_absent_ms),
            returned_ms=dict(self.returned_ms),
            shutdown_seen_ms=leaving,
            known_racks=dict(self.known_racks),
            min_insync=min_insync,
            eligible_leaders=eligible,
            quorum=quorum,
            kafka_auto_leader_rebalance=rebalance,
            replication_settings=settings,
        )

    def _eligible_leaders(
        self, partitions: PartitionTable, min_insync: dict[str, int]
    ) -> dict[TopicPartition, tuple[int, ...]]:
        """KIP-966's eligible leader replicas, read for the topics with a partition under its
        min.insync.replicas (1 where unknown): only those can have any. A read that fails is
        logged and leaves them unknown: it never blinds a cycle."""
        least = np.array([min_insync.get(t, 1) for t in partitions.names], dtype=np.int64)
        under = partitions.isr.counts() < least[partitions.topic]
        short = sorted(partitions.names[t] for t in np.unique(partitions.topic[under]).tolist())
        if not short or self._admin is None:
            return {}
        try:
            return describe_eligible_leaders(self._admin, short)
        except Exception as exc:  # kafka-python raises several unrelated types
            log.warning("eligible_leaders_unreadable", topics=len(short), error=str(exc))
            return {}

    def _read_admin(
        self, *, list_reassignments: bool = True
    ) -> tuple[dict[int, BrokerNode], PartitionTable, dict[TopicPartition, Reassignment]]:
        """One consistent Admin API read, asked again when it fails: first on the same client,
        whose reconnect backoff now skips the broker that failed (one that has just died and is
        not yet fenced) and whose requests now avoid a broker one timed out on (a hung broker,
        in a long GC pause, holds its connections open and swallows requests until they time
        out: kmedic.kafka_admin.steer_requests), then on a fresh client, so neither a dead nor
        a hung broker can blind the manager."""
        errors = []
        for attempt in range(1, ADMIN_ATTEMPTS + 1):
            try:
                client = self._client()
                live = {
                    b: n for b, n in parse_nodes(client.describe_cluster()).items() if not n.fenced
                }
                partitions = describe_partitions(client)
                if list_reassignments:
                    self._reassignments = self._list_reassignments(client, live)
                return live, partitions, dict(self._reassignments)
            except Exception as exc:  # kafka-python raises several unrelated types
                errors.append(str(exc) or type(exc).__name__)
                log.info("admin_read_retry", attempt=attempt, error=errors[-1])
                if attempt >= SAME_CLIENT_ATTEMPTS:
                    self._close_admin()
        raise AdminUnavailable(f"Admin API read failed {ADMIN_ATTEMPTS} times: {errors[-1]}")

    def _list_reassignments(
        self, client: Any, live: dict[int, BrokerNode]
    ) -> dict[TopicPartition, Reassignment]:
        """ListPartitionReassignments, sent to a broker that forwards it (kmedic.forwarders):
        kafka-python keeps the controller its metadata once named, which for
        seconds after a broker dies may be that dead, unfenced broker, and picks anew at random,
        which may be a broker cut off from the controllers."""
        node = self.avoided.pick(live, client._manager.least_loaded_node(), time.monotonic())
        client._controller_id = node
        try:
            return parse_reassignments(
                client.list_partition_reassignments(timeout_ms=self._timeout_ms)
            )
        except Exception:
            self.avoided.failed(node, time.monotonic())
            raise

    def _remember(
        self,
        now_ms: int,
        live: dict[int, Any],
        agents: dict[int, AgentView],
        replica_ids: set[int],
        returns: dict[int, int] | None = None,
        away: dict[int, int] | None = None,
    ) -> None:
        away = away or {}
        # A broker fenced and back between two cycles was never seen absent: its return, seen
        # by the registration watch (or this read, when the watch last saw it away), starts
        # its recovery window all the same.
        back = dict(returns or {}) | {b: now_ms for b in away}
        for b, back_ms in back.items():
            if b in live and b not in self.first_absent_ms:
                self.returned_ms[b] = max(back_ms, self.returned_ms.get(b, back_ms))
        for b, n in live.items():
            if self.first_absent_ms.pop(b, None) is not None:
                self.returned_ms[b] = now_ms  # back: its replicas catch up from here
            if n.rack:
                self.known_racks[b] = n.rack
        for b in (set(agents) | replica_ids) - set(live):
            # Absent since the watch's read that first missed it, when that came first.
            self.first_absent_ms.setdefault(b, min(away.get(b, now_ms), now_ms))
        for b, a in agents.items():
            if a.latest.rack and b not in self.known_racks:
                self.known_racks[b] = a.latest.rack
