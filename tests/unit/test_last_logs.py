"""An offline partition's evidence, gathered from the agents' records into the snapshot
(manager.monitor.last_logs), and what it makes of the ways out and of the heal's refusal."""

from __future__ import annotations

from typing import Any

from manager_fakes import stats
from test_observe import NOW, node, observation, snapshot, view

from kmedic.metadata import PartitionInfo
from manager.analyzer.placement_state import ClusterState
from manager.analyzer.planner import decide
from manager.analyzer.recovery import partition_ways
from manager.monitor.observation import AgentView


def _leader(end: int, rate: float) -> dict[str, Any]:
    return {
        "topic": "t",
        "partition": 0,
        "bytes_in_per_s": rate * 100,
        "bytes_out_per_s": 0.0,
        "messages_in_per_s": rate,
        "log_size_bytes": end * 100,
        "log_start_offset": 40,
        "log_end_offset": end,
        "estimate": "size_delta",
    }


def _follower(end: int) -> dict[str, Any]:
    return {
        "topic": "t",
        "partition": 0,
        "leader_id": 1,
        "log_size_bytes": end * 100,
        "log_end_offset": end,
        "in_isr": False,
    }


def _offline(**overrides: Any) -> Any:
    """t:0 on brokers 1, 2, 3: its leader 1 and 2 dead, 3 alive but out of sync; Kafka's
    last ISR is the leader alone."""
    base: dict[str, Any] = {
        "live": {3: node("/r1"), 4: node("/r2"), 5: node("/r1")},
        "partitions": [
            PartitionInfo("t", 0, -1, (1, 2, 3), (1,)),
            PartitionInfo("u", 0, 3, (3, 4, 5), (3, 4, 5)),
        ],
        "agents": {
            1: view(stats(1, ts=NOW - 30_000, leaders=[_leader(1_000, 10.0)]), NOW - 30_000),
            3: view(stats(3, ts=NOW - 10_000, followers=[_follower(900)]), NOW - 10_000),
        },
        "first_absent_ms": {1: NOW - 20_000, 2: NOW - 20_000},
    }
    base.update(overrides)
    return snapshot(observation(**base))


def test_an_offline_partition_carries_its_last_leaders_log_and_each_replicas_sampled_end() -> None:
    snap = _offline()
    [off] = snap.offline_partitions
    assert (off.topic, off.partition) == ("t", 0)
    assert off.leader is not None
    assert (off.leader.broker, off.leader.log_start, off.leader.log_end) == (1, 40, 1_000)
    assert off.leader.messages_per_s == 10.0 and off.leader.sampled_at_ms == NOW - 30_000
    assert off.died_at_ms == NOW - 20_000  # seen absent then: it wrote no later
    assert [(r.broker, r.log_end) for r in off.logs] == [(1, 1_000), (3, 900)]
    ways = partition_ways(snap, off, NOW)
    # 1,000 + 10 s at 10/s = 1,100 at most; broker 3 holds 900
    assert [(w.name, w.loses_at_most) for w in ways] == [
        ("wait:1", 0),
        ("elect:3", 200),
        ("recreate", 1_060),
    ]


def test_the_agent_seeing_the_leader_down_first_dates_its_last_write() -> None:
    down = stats(
        1,
        ts=NOW - 5_000,
        failed=True,
        process={
            "state": "not_running",
            "broker_state": None,
            "logs_to_recover": None,
            "segments_to_recover": None,
            "listening": False,
            "down_since_ms": NOW - 25_000,
            "restarts": 0,
            "restart_window_s": 600.0,
        },
    )
    healthy = stats(1, ts=NOW - 30_000, leaders=[_leader(1_000, 10.0)])
    agents = {
        1: AgentView(latest=down, last_healthy_ms=NOW - 30_000, healthy=healthy),
        3: view(stats(3, ts=NOW - 10_000, followers=[_follower(900)]), NOW - 10_000),
    }
    [off] = _offline(agents=agents).offline_partitions
    assert off.died_at_ms == NOW - 25_000


def test_a_partition_kafka_can_elect_a_leader_for_itself_is_not_offline() -> None:
    # broker 3 is alive and in the ISR (or eligible): Kafka elects it, nothing is lost
    assert (
        _offline(partitions=[PartitionInfo("t", 0, -1, (1, 2, 3), (1, 3))]).offline_partitions == ()
    )
    assert _offline(partitions=[PartitionInfo("t", 0, 1, (1, 2, 3), (1,))]).offline_partitions == ()


def test_the_heals_refusal_names_the_command_and_the_best_way_out() -> None:
    snap = _offline()
    assert ClusterState(snap).last_resort == {
        0: "t:0: wait for broker 1, which Kafka last counted in sync or eligible: every "
        "committed record kept"
    }
    said = " ".join(r.message for r in decide(snap).reasons)
    assert "`kmedic recover` says what each way out would lose" in said
    assert "(the best now: wait for broker 1" in said
