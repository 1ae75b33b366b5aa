"""The last resort's arithmetic (manager.analyzer.recovery): the ways out of an offline
partition, each with the most it can lose, ranked; pure."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from manager.analyzer.recovery import (
    LeaderLog,
    Survivor,
    Way,
    chosen_way,
    newest_offset,
    ways_out,
)

T0 = 1_700_000_000_000
LEADER = LeaderLog(broker=1, log_start=100, log_end=1_000, sampled_at_ms=T0, messages_per_s=10.0)


def test_an_eligible_replica_that_may_come_back_is_waited_for_before_any_election() -> None:
    ways = ways_out(
        LEADER,
        [
            Survivor(2, alive=True, eligible=False, log_end=990, sampled_at_ms=T0),
            Survivor(3, alive=False, eligible=True),
        ],
        died_at_ms=T0 + 3_000,
        now_ms=T0 + 60_000,
    )
    assert [(w.kind, w.broker, w.loses_at_most) for w in ways] == [
        ("wait", 3, 0),
        ("elect", 2, 40),  # 1,000 + 3 s at 10/s = 1,030 at most; it holds 990
        ("recreate", None, 930),
    ]
    assert ways[0].sentence("t:0") == (
        "t:0: wait for broker 3, which Kafka last counted in sync or eligible: every committed "
        "record kept"
    )
    assert ways[1].sentence("t:0") == (
        "t:0: elect broker 2 uncleanly: loses at most 40 records, about 4 s of writes "
        "(evidence 60 s old)"
    )


def test_elections_are_ranked_by_their_bound_and_a_replica_never_sampled_comes_last() -> None:
    ways = ways_out(
        LEADER,
        [
            Survivor(2, alive=True, eligible=False),
            Survivor(3, alive=True, eligible=False, log_end=900, sampled_at_ms=T0 - 5_000),
            Survivor(4, alive=True, eligible=False, log_end=1_000, sampled_at_ms=T0),
            Survivor(5, alive=False, eligible=False, log_end=1_000, sampled_at_ms=T0),
        ],
        died_at_ms=T0,
        now_ms=T0 + 10_000,
    )
    assert [(w.kind, w.broker, w.loses_at_most) for w in ways] == [
        ("wait", 5, 0),  # dead, but its log reached the newest record the leader can have
        ("elect", 4, 0),
        ("elect", 3, 100),
        ("elect", 2, None),
        ("recreate", None, 900),
    ]
    assert ways[2].evidence_age_ms == 15_000  # the older of the two samples
    assert "its loss is unknown" in ways[3].sentence("t:0")


def test_without_the_leaders_evidence_no_bound_is_given() -> None:
    ways = ways_out(None, [Survivor(2, True, False, 500, T0)], died_at_ms=T0, now_ms=T0)
    assert [(w.kind, w.loses_at_most) for w in ways] == [("elect", None), ("recreate", None)]
    assert ways[-1].sentence("t:0") == "t:0: recreate it empty: loses every record"


@given(
    sampled_end=st.integers(0, 10_000),
    rate=st.floats(0, 1_000, allow_nan=False),
    after_ms=st.integers(0, 120_000),
    written_share=st.floats(0, 1),
    replica_behind=st.integers(0, 10_000),
    caught_up_share=st.floats(0, 1),
)
def test_the_bound_never_falls_short_of_the_loss_and_exceeds_it_by_the_evidences_age(
    sampled_end: int,
    rate: float,
    after_ms: int,
    written_share: float,
    replica_behind: int,
    caught_up_share: float,
) -> None:
    """Any truth the samples allow: the leader wrote at most its rate after its sample, the
    replica only gained records after its own (never past the leader's true end)."""
    leader = LeaderLog(1, 0, sampled_end, T0, rate)
    most = math.ceil(rate * after_ms / 1000)
    true_end = sampled_end + math.floor(most * written_share)
    replica_sampled = max(0, sampled_end - replica_behind)
    replica_true = replica_sampled + math.floor((true_end - replica_sampled) * caught_up_share)
    survivor = Survivor(2, alive=True, eligible=False, log_end=replica_sampled, sampled_at_ms=T0)
    [elect, _] = ways_out(leader, [survivor], died_at_ms=T0 + after_ms, now_ms=T0 + after_ms)
    true_loss = max(0, true_end - replica_true)
    assert elect.loses_at_most is not None and elect.loses_at_most >= true_loss
    slack = (newest_offset(leader, T0 + after_ms) - true_end) + (replica_true - replica_sampled)
    assert elect.loses_at_most - true_loss <= slack


@given(
    st.lists(
        st.tuples(st.booleans(), st.booleans(), st.none() | st.integers(0, 2_000)),
        min_size=1,
        max_size=6,
    )
)
def test_no_way_that_loses_is_ranked_before_one_that_does_not(
    replicas: list[tuple[bool, bool, int | None]],
) -> None:
    survivors = [
        Survivor(b, alive, eligible, end, None if end is None else T0)
        for b, (alive, eligible, end) in enumerate(replicas, start=2)
    ]
    ways = ways_out(LEADER, survivors, died_at_ms=T0 + 1_000, now_ms=T0 + 5_000)
    assert ways[-1].kind == "recreate"
    kinds = [w.kind for w in ways]
    assert kinds == sorted(kinds, key=["wait", "elect", "recreate"].index)
    known = [w.loses_at_most for w in ways if w.kind == "elect" and w.loses_at_most is not None]
    assert known == sorted(known)
    assert all(w.loses_at_most == 0 for w in ways if w.kind == "wait")
    waits = {w.broker for w in ways if w.kind == "wait"}
    assert {s.broker for s in survivors if not s.alive and s.eligible} <= waits
    assert not any(isinstance(w, Way) and w.broker in waits and w.kind == "elect" for w in ways)


def test_a_way_is_taken_only_with_a_loss_accepted_at_or_above_its_bound_now() -> None:
    ways = ways_out(
        LEADER,
        [
            Survivor(2, alive=True, eligible=False, log_end=990, sampled_at_ms=T0),
            Survivor(3, alive=True, eligible=False),
            Survivor(4, alive=False, eligible=True),
        ],
        died_at_ms=T0 + 3_000,
        now_ms=T0 + 5_000,
    )
    assert chosen_way(ways, "t:0", "elect:2", 40) == ways[1]
    assert chosen_way(ways, "t:0", "elect:2", None) == ways[1]
    assert chosen_way(ways, "t:0", "elect:2", 39) == (
        "t:0: elect:2 now loses at most 40 records, more than the 39 accepted: read the ways "
        "again (the bound grew since)"
    )
    assert "accept it with --accept-loss all" in str(chosen_way(ways, "t:0", "elect:3", 10**9))
    assert chosen_way(ways, "t:0", "elect:3", None) == ways[2]
    assert "nothing to act on" in str(chosen_way(ways, "t:0", "wait:4", 0))
    assert chosen_way(ways, "t:0", "elect:9", 0) == (
        "t:0: no way out named 'elect:9' (the ways now: wait:4, elect:2, elect:3, recreate)"
    )
