"""The pure translation from a cycle's observations to the planner's snapshot."""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import MetadataResponse
from manager_fakes import stats
from metadata_fixtures import partitions_of, wire

from kmedic.brokerstats import BrokerStats
from kmedic.metadata import BrokerNode, PartitionInfo, Reassignment
from kmedic.partition_table import PartitionTable
from manager.model.placement_config import Domain, PlacementConfig
from manager.model.policy import Policy
from manager.model.snapshot import Leadership
from manager.model.snapshot_file import find_problems
from manager.monitor.load_columns import LoadColumns, LoadView
from manager.monitor.observation import AgentView, Observation
from manager.monitor.observe import UNKNOWN_DISK_BYTES, CapacitySettings, build_snapshot, dead_since
from manager.monitor.sources import ClusterSources

NOW = 1_800_000_000_000


def view(s: BrokerStats, last_healthy: int | None) -> AgentView:
    return AgentView(latest=s, last_healthy_ms=last_healthy, healthy=None if s.failure else s)


def node(rack: str) -> BrokerNode:
    return BrokerNode(host="h", port=1, rack=rack, fenced=False)


def observation(**overrides: Any) -> Observation:
    base: dict[str, Any] = {
        "taken_at_ms": NOW,
        "cluster": "c",
        "live": {1: node("/r1"), 2: node("/r2"), 3: node("/r1")},
        "partitions": [
            PartitionInfo("t", 0, 1, (1, 2, 3), (1, 2, 3)),
            PartitionInfo("t", 1, 2, (2, 3, 4), (2, 3)),
        ],
        "reassignments": {},
        "agents": {},
        "loads": {},
        "placement": PlacementConfig(),
        "leadership": Leadership(holder="m1", epoch=3, current_epoch=3, is_leader=True),
        "own_moves": frozenset(),
        "moves_last_hour": 0,
    }
    base.update(overrides)
    base["partitions"] = PartitionTable.of(base["partitions"])
    base["loads"] = LoadColumns.of(base["loads"])
    return Observation(**base)


def snapshot(obs: Observation, **settings: Any) -> Any:
    return build_snapshot(obs, Policy(), CapacitySettings(**settings))


def brokers(snap: Any) -> dict[int, Any]:
    return {b.id: b for b in snap.brokers}


def test_a_broker_only_in_replica_lists_is_dead_since_first_seen_absent() -> None:
    obs = observation(first_absent_ms={4: NOW - 60_000}, known_racks={4: "/r2"})
    b4 = brokers(snapshot(obs))[4]
    assert not b4.alive
    assert b4.dead_since_ms == NOW - 60_000
    assert b4.rack == "/r2"


def test_dead_since_is_the_later_of_absence_and_last_healthy_stats() -> None:
    agents = {4: view(stats(4, ts=NOW - 5_000, failed=True), last_healthy=NOW - 20_000)}
    obs = observation(agents=agents, first_absent_ms={4: NOW - 60_000})
    b4 = brokers(snapshot(obs))[4]
    assert not b4.alive
    assert b4.dead_since_ms == NOW - 20_000
    assert b4.rack == "/r1"  # from the agent's record: metadata no longer knows it


def test_a_broker_in_metadata_is_alive_even_when_its_agent_reports_failure() -> None:
    agents = {1: view(stats(1, ts=NOW, failed=True), last_healthy=None)}
    b1 = brokers(snapshot(observation(agents=agents)))[1]
    assert b1.alive
    assert b1.dead_since_ms is None


def test_a_failed_samples_probes_are_the_brokers_latency_else_the_last_healthy_ones() -> None:
    """A live broker whose reads fail behind a slow link: its failure record's probes are the
    newest evidence of how long it takes to answer (the healthy sample's were read before, and
    a broker whose every sample failed was never scored). A failure that probed nothing leaves
    the healthy sample's figures."""

    def latency_of(p90_ms: float) -> dict[str, Any]:
        return {
            "probe_count": 4,
            "probe_failures": 0,
            "probe_p50_ms": p90_ms,
            "probe_p90_ms": p90_ms,
            "probe_max_ms": p90_ms,
            "produce_local_ms": None,
            "log_flush_ms": None,
        }

    probed = latency_of(1000.0)
    healthy = stats(1, ts=NOW - 20_000, latency=latency_of(3.0))
    failed = stats(1, ts=NOW, failed=True, latency=probed)
    agents = {1: AgentView(latest=failed, last_healthy_ms=NOW - 20_000, healthy=healthy)}
    latency = brokers(snapshot(observation(agents=agents)))[1].latency
    assert latency is not None and (latency.sampled_at_ms, latency.probe_p90_ms) == (NOW, 1000.0)
    quiet = stats(1, ts=NOW, failed=True)
    agents = {1: AgentView(latest=quiet, last_healthy_ms=NOW - 20_000, healthy=healthy)}
    latency = brokers(snapshot(observation(agents=agents)))[1].latency
    assert latency is not None and (latency.sampled_at_ms, latency.probe_p90_ms) == (
        NOW - 20_000,
        3.0,
    )


def test_a_dead_broker_carries_both_signals_of_its_death() -> None:
    # The audit's evidence comes from the snapshot's broker, not from a side channel.
    agents = {4: view(stats(4, ts=NOW, failed=True), last_healthy=NOW - 30_000)}
    obs = observation(agents=agents, first_absent_ms={4: NOW - 1})
    assert dead_since(obs, 4) == NOW - 1  # absent since, later than its last healthy stats
    b4 = brokers(snapshot(obs))[4]
    assert not b4.alive
    assert b4.death_evidence(NOW) == (
        "broker 4: absent from cluster metadata, last healthy stats 30s ago; unknown: its "
        "agent does not report the process: the 600 s grace applies"
    )


def test_sizes_come_from_the_leaders_agent_and_loads_from_the_load_topic() -> None:
    leader = {
        "topic": "t",
        "partition": 0,
        "bytes_in_per_s": 1.0,
        "bytes_out_per_s": 1.0,
        "messages_in_per_s": 1.0,
        "log_size_bytes": 5000,
        "log_start_offset": 0,
        "log_end_offset": 10,
        "estimate": "size_delta",
    }
    s1 = stats(1, ts=NOW, leaders=[leader])
    loads = {
        ("t", 0): LoadView(100.0, 50.0, 2.0, last_report_ms=NOW - 1000, samples=3),
        ("t", 1): LoadView(10.0, 5.0, 1.0, last_report_ms=NOW - 10**9, samples=3),
    }
    snap = snapshot(observation(agents={1: view(s1, NOW)}, loads=loads))
    parts = {p.partition: p for p in snap.topics[0].partitions}
    assert parts[0].size_bytes == 5000
    assert parts[0].load is not None and parts[0].load.window_valid
    assert parts[0].load.bytes_in_per_s == 100.0
    assert parts[1].load is not None and not parts[1].load.window_valid  # stale


def test_reassignments_are_marked_kmedics_only_when_in_its_plan() -> None:
    ra = {("t", 0): Reassignment((1, 2, 3, 4), (4,), (3,)), ("t", 1): Reassignment((2, 3), (), ())}
    snap = snapshot(observation(reassignments=ra, own_moves=frozenset({("t", 0)})))
    marks = {(r.topic, r.partition): r.started_by_kmedic for r in snap.reassignments}
    assert marks == {("t", 0): True, ("t", 1): False}


def test_zookeeper_config_reaches_the_snapshot_and_it_validates() -> None:
    cfg = PlacementConfig(domains={"a": Domain(name="a", brokers=(1, 3))})
    snap = snapshot(observation(placement=cfg, first_absent_ms={4: NOW}, known_racks={4: "/r2"}))
    assert [(d.name, d.brokers) for d in snap.failure_domains] == [("a", (1, 3))]
    assert find_problems(snap) == []


def test_disk_capacity_is_discovered_or_unbounded() -> None:
    log_dir = {
        "path": "/d",
        "total_bytes": 1000,
        "free_bytes": 400,
        "replica_bytes": 500,
        "error": None,
    }
    s1 = stats(1, ts=NOW, log_dirs=[log_dir])
    snap = snapshot(observation(agents={1: view(s1, NOW)}))
    b1 = brokers(snap)[1]
    assert b1.capacity is not None and b1.capacity.disk_bytes == 1000
    assert b1.disk_used_bytes == 600
    assert snap.default_capacity is not None and snap.default_capacity.disk_bytes == 1000
    bare = snapshot(observation())
    assert bare.default_capacity is not None
    assert bare.default_capacity.disk_bytes == UNKNOWN_DISK_BYTES
    configured = snapshot(observation(agents={1: view(s1, NOW)}), disk_bytes=5000)
    assert brokers(configured)[1].capacity is None
    assert configured.default_capacity is not None
    assert configured.default_capacity.disk_bytes == 5000


def test_a_broker_seen_back_after_an_absence_is_remembered_as_returned() -> None:
    sources = ClusterSources(
        cluster="c", bootstrap="127.0.0.1:1", stats_topic="s", loads_topic="l", stats_lookback_s=60
    )
    sources._remember(NOW, {1: node("/r1")}, {}, {1, 2})
    assert sources.first_absent_ms == {2: NOW} and sources.returned_ms == {}
    both = {1: node("/r1"), 2: node("/r2")}
    sources._remember(NOW + 5, both, {}, {1, 2})
    assert sources.first_absent_ms == {} and sources.returned_ms == {2: NOW + 5}
    sources._remember(NOW + 10, both, {}, {1, 2})
    assert sources.returned_ms == {2: NOW + 5}, "back once, not again every cycle"


def test_only_a_live_broker_carries_when_it_returned() -> None:
    obs = observation(returned_ms={3: NOW - 1000, 4: NOW - 5000}, first_absent_ms={4: NOW - 1})
    found = brokers(snapshot(obs))
    assert found[3].returned_at_ms == NOW - 1000
    assert found[4].alive is False and found[4].returned_at_ms is None
    assert found[1].returned_at_ms is None


def test_only_a_live_broker_carries_when_it_was_seen_shutting_down() -> None:
    obs = observation(shutdown_seen_ms={3: NOW - 300, 4: NOW - 900}, first_absent_ms={4: NOW})
    found = brokers(snapshot(obs))
    assert found[3].shutdown_seen_ms == NOW - 300 and found[3].shutting_down(NOW)
    assert found[4].alive is False and found[4].shutdown_seen_ms is None
    assert found[1].shutdown_seen_ms is None and not found[1].shutting_down(NOW)


def test_offline_replicas_reach_the_snapshot_from_the_metadata() -> None:
    response = wire({"t": [(0, 2, [1, 2, 3], [2, 3], [1])]}, MetadataResponse.max_version)
    (info,) = partitions_of(response)
    assert info.offline == (1,)
    snap = snapshot(observation(partitions=[info]))
    (partition,) = snap.topics[0].partitions
    assert partition.offline_replicas == (1,) and partition.isr == (2, 3)


def test_network_capacity_comes_from_the_config_else_the_agents_link_speed() -> None:
    nic = {"interface": "eth0", "speed_bytes_per_s": 1_250_000_000, "note": None}
    lo = {"interface": "lo", "speed_bytes_per_s": None, "note": "the broker listens on loopback"}
    agents = {1: view(stats(1, ts=NOW, nic=nic), NOW), 2: view(stats(2, ts=NOW, nic=lo), NOW)}
    found = brokers(snapshot(observation(agents=agents)))
    one, two, three = found[1], found[2], found[3]
    assert one.capacity is not None and one.capacity.network_in_bytes_per_s == 1_250_000_000
    assert one.capacity_source is not None
    assert (one.capacity_source.network, one.capacity_source.interface) == ("agent", "eth0")
    assert one.capacity_source.disk == "unknown"
    # No speed to read (loopback) or no agent: the default, and it says so.
    assert two.capacity is None and two.capacity_source is not None
    assert two.capacity_source.network == "default"
    assert three.capacity_source is not None and three.capacity_source.network == "default"
    # A configured figure wins over the agent's.
    configured = brokers(
        snapshot(
            observation(agents=agents), network_in_bytes_per_s=5e8, network_out_bytes_per_s=5e8
        )
    )
    assert configured[1].capacity is None
    assert configured[1].capacity_source is not None
    assert configured[1].capacity_source.network == "config"


def _leader(topic: str, partition: int, size: int) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": partition,
        "bytes_in_per_s": 0.0,
        "bytes_out_per_s": 0.0,
        "messages_in_per_s": 0.0,
        "log_size_bytes": size,
        "log_start_offset": 0,
        "log_end_offset": 0,
        "estimate": "size_delta",
    }


def _follower(topic: str, partition: int, leader: int, size: int) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": partition,
        "leader_id": leader,
        "log_size_bytes": size,
        "log_end_offset": 0,
        "in_isr": True,
    }


def test_a_partition_is_as_large_as_its_leader_says_else_as_its_largest_follower() -> None:
    # t:0's leader (broker 1) reports it; t:1's leader (broker 2) has no agent record, so
    # its followers' largest size stands (broker 3 reports it; broker 1 does not hold it).
    agents = {
        1: view(stats(1, ts=NOW, leaders=[_leader("t", 0, 700)]), NOW),
        3: view(
            stats(3, ts=NOW, followers=[_follower("t", 0, 1, 900), _follower("t", 1, 2, 400)]),
            NOW,
        ),
        4: view(stats(4, ts=NOW, followers=[_follower("t", 1, 2, 650)]), NOW),
    }
    sizes = {
        p.partition: p.size_bytes for p in snapshot(observation(agents=agents)).topics[0].partitions
    }
    assert sizes == {0: 700, 1: 650}
