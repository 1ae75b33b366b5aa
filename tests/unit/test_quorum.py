"""The KRaft controller quorum (pure parts and the manager's use of them): the reading parsed
from DescribeMetadataQuorum, voters down and lagging, the gate that holds every move while no
leader answers, and the gauges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from manager_fakes import Rig
from planner_fixtures import broker, make, part

from manager.analyzer.planner import decide
from manager.analyzer.quorum_health import down, lagging, sentence
from manager.model.snapshot import Quorum, QuorumVoter
from manager.monitor.quorum import QuorumReader, parse_quorum

NOW = 1_700_000_000_000


def answer(leader: int = 101, voters: list[tuple[int, int, int]] | None = None) -> dict[str, Any]:
    """kafka-python's describe_metadata_quorum() shape: (id, log end offset, last fetch)."""
    voters = voters or [(100, 50, NOW - 200), (101, 50, NOW - 5), (102, -1, -1)]
    return {
        "topics": [
            {
                "topic_name": "__cluster_metadata",
                "partitions": [
                    {
                        "partition_index": 0,
                        "leader_id": leader,
                        "leader_epoch": 3,
                        "high_watermark": 50,
                        "current_voters": [
                            {
                                "replica_id": i,
                                "log_end_offset": end,
                                "last_fetch_timestamp": at,
                                "last_caught_up_timestamp": at,
                            }
                            for i, end, at in voters
                        ],
                        "observers": [],
                        "error": None,
                    }
                ],
            }
        ]
    }


def test_a_reading_keeps_the_leader_and_each_voters_lag_and_last_fetch() -> None:
    q = parse_quorum(answer(), NOW)
    assert (q.state, q.leader) == ("led", 101)
    assert q.voters == (
        QuorumVoter(id=100, lag=0, last_fetch_age_ms=200),
        QuorumVoter(id=101, lag=0, last_fetch_age_ms=5),
        QuorumVoter(id=102, lag=None, last_fetch_age_ms=None),  # dead before this leader
    )
    assert [v.id for v in down(q)] == [102]
    assert sentence(q) == "quorum led by 101; voters 100, 101, 102 (down)"
    assert parse_quorum(answer(leader=-1), NOW).state == "leaderless"


def test_a_voter_silent_for_ten_seconds_is_down_and_one_far_behind_is_lagging() -> None:
    q = parse_quorum(answer(voters=[(100, 50, NOW - 11_000), (101, 50, NOW), (102, 9, NOW)]), NOW)
    q = q.model_copy(
        update={"voters": (*q.voters[:2], QuorumVoter(id=102, lag=2_000, last_fetch_age_ms=3))}
    )
    assert [v.id for v in down(q)] == [100]
    assert [v.id for v in lagging(q)] == [102]
    # The leader is never down by its own fetch age.
    lone = Quorum(state="led", leader=100, voters=(QuorumVoter(id=100, last_fetch_age_ms=None),))
    assert down(lone) == []


class Timeouts:
    def __init__(self, error: Exception) -> None:
        self.error = error
        self.calls = 0

    def describe_metadata_quorum(self) -> Any:
        self.calls += 1
        raise self.error

    def close(self) -> None:
        pass


def test_two_timeouts_mean_leaderless_and_any_other_failure_unknown() -> None:
    from kafka.errors import ClusterAuthorizationFailedError, RequestTimedOutError

    reader = QuorumReader("127.0.0.1:1")
    timing_out = Timeouts(RequestTimedOutError("after 2000 ms"))
    reader._client = lambda: timing_out  # type: ignore[method-assign]
    q = reader.read(NOW)
    assert q.state == "leaderless" and timing_out.calls == 2, q
    assert "no quorum leader answered (RequestTimedOutError" in (q.error or "")
    refused = Timeouts(ClusterAuthorizationFailedError("no DESCRIBE on the cluster"))
    reader._client = lambda: refused  # type: ignore[method-assign]
    q = reader.read(NOW)
    assert q.state == "unknown" and refused.calls == 1, q


def snapshot(quorum: Quorum | None) -> Any:
    brokers = [broker(b, "/r1" if b % 2 else "/r2", alive=b != 4) for b in (1, 2, 3, 4)]
    parts = [part(n, [n % 4 + 1, (n + 1) % 4 + 1], alive={1, 2, 3}) for n in range(4)]
    return make(brokers, {"t": parts}, quorum=quorum.model_dump() if quorum else None)


def test_no_move_starts_while_the_quorum_has_no_leader() -> None:
    assert decide(snapshot(None)).outcome == "act"  # a heal of broker 4
    led = Quorum(state="led", leader=100, voters=(QuorumVoter(id=100, lag=0),))
    assert decide(snapshot(led)).outcome == "act"
    assert decide(snapshot(Quorum(state="unknown", error="refused"))).outcome == "act"
    leaderless = Quorum(state="leaderless", error="no quorum leader answered", voters=())
    held = decide(snapshot(leaderless))
    assert held.outcome == "refuse" and not held.actions
    assert [r.code for r in held.reasons] == ["quorum_without_leader"]
    assert "nothing can be committed, so no move starts" in held.reasons[0].message


def gauge(rig: Rig, name: str, **labels: str) -> float | None:
    return rig.manager.metrics.registry.get_sample_value(name, {"cluster": "c", **labels})


def test_the_cycle_exports_the_quorum_and_refuses_without_a_leader(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.sources.quorum = parse_quorum(answer(), NOW)
    rig.manager.cycle()
    assert gauge(rig, "kmedic_quorum_has_leader") == 1
    assert gauge(rig, "kmedic_quorum_voters", state="down") == 1
    assert gauge(rig, "kmedic_quorum_voters", state="up") == 2
    assert gauge(rig, "kmedic_quorum_voter_lag_records", voter="100") == 0
    rig.sources.quorum = Quorum(state="leaderless", error="no quorum leader answered")
    rig.sources.dead = {4}
    outcome = rig.manager.cycle()
    assert outcome.kind == "refuse" and "quorum_without_leader" in outcome.reasons, outcome
    assert gauge(rig, "kmedic_quorum_has_leader") == 0
    assert rig.executor.submitted == []
    rig.sources.quorum = Quorum(state="unknown", error="refused")
    rig.manager.cycle()
    assert gauge(rig, "kmedic_quorum_read") == 0
    assert gauge(rig, "kmedic_quorum_has_leader") == 0  # as last known
