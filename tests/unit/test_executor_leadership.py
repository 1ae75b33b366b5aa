"""The executor hands leadership over for real: a move whose replicas are already in the target
order still gets its preferred-leader election, and a move is judged done when the metadata
shows its target in order, not merely its replica set (a reorder keeps the set). Found by
clean-clone CI: a demote of broker 4 looped for 120 s, every plan "completing" its leadership
moves without an election while broker 4 kept leading.

An in-memory Admin API stands in for Kafka here; the real cluster runs the same paths in
tests/integration/test_executor.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from executor_fakes import TOPIC, FakeCalls, FakeKafka
from kafka.errors import PreferredLeaderNotAvailableError

from manager.executor import admin_calls as admin_calls_module
from manager.executor import executor as executor_module
from manager.executor.batches import IntoLimit
from manager.executor.config import ExecutorConfig
from manager.executor.executor import Executor
from manager.executor.replica_sizes import ReplicaSizes
from manager.model.moves import Move
from manager.throttling.ownership import FOLLOWER_RATE
from manager.throttling.targets import WriteBudget


@pytest.fixture(autouse=True)
def no_sizes_to_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """No broker to ask for the watchdog's samples: a sample it could not take (what the real
    sampler gives once its bootstrap from ``unused:9092`` times out, seconds later)."""
    monkeypatch.setattr(ReplicaSizes, "__call__", lambda self, adding: {})


@pytest.fixture(autouse=True)
def metadata_from_the_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        admin_calls_module, "describe_partitions", lambda kp, topics: kp.partitions(topics)
    )


@pytest.fixture
def build(monkeypatch: pytest.MonkeyPatch) -> Callable[[FakeKafka], Executor]:
    def make(kafka: FakeKafka) -> Executor:
        monkeypatch.setattr(executor_module, "AdminCalls", lambda *a, **k: FakeCalls(kafka))
        ex = Executor("unused:9092", ExecutorConfig(throttle_bytes_per_s=None), clock=lambda: 0.0)
        return ex

    return make


def test_a_partition_already_in_the_target_order_still_gets_its_election(
    build: Callable[[FakeKafka], Executor],
) -> None:
    # A demote's reorder was applied earlier (by a previous plan, or before a failover), and
    # broker 4 still leads: the move is "already done" replica-wise, its election is not.
    kafka = FakeKafka({0: (2, 1, 4)}, {0: 4})
    ex = build(kafka)
    ex.submit([Move(TOPIC, 0, (2, 1, 4))])
    ex.step()
    state = ex.states[(TOPIC, 0)]
    assert kafka.leaders[0] == 2, "broker 4 still leads: no election was run"
    # Kafka taking the election is no proof: the next read says who leads.
    assert state.status == "in_flight"
    ex.step()
    assert state.status == "completed", state.error
    assert state.details["preferred_leader_election"] == "broker 2 leads"


def test_already_in_order_and_led_by_the_first_replica_needs_no_election(
    build: Callable[[FakeKafka], Executor],
) -> None:
    kafka = FakeKafka({0: (2, 1, 4)}, {0: 2})
    ex = build(kafka)
    ex.submit([Move(TOPIC, 0, (2, 1, 4))])
    ex.step()
    assert ex.states[(TOPIC, 0)].status == "completed"
    assert kafka.elections == []


def _told(ex: Executor) -> list[tuple[str, str]]:
    said: list[tuple[str, str]] = []
    ex.on_event = lambda kind, state, details: said.append((kind, state.move.key))
    return said


def test_a_move_found_in_place_tells_only_what_it_did(
    build: Callable[[FakeKafka], Executor],
) -> None:
    # Found by the 60-minute soak: a plan made on a view older than the executor's read had
    # moves already at their target; each was told "completed" with no start, the end of the
    # move that had put the replicas there told a second time.
    kafka = FakeKafka({0: (2, 1, 4), 1: (2, 1, 4)}, {0: 2, 1: 4})
    ex = build(kafka)
    said = _told(ex)
    ex.submit([Move(TOPIC, 0, (2, 1, 4)), Move(TOPIC, 1, (2, 1, 4))])
    ex.step()
    ex.step()
    assert [s.status for s in ex.states.values()] == ["completed", "completed"]
    # Partition 0: nothing to do, nothing told. Partition 1: its election was its move.
    assert said == [("action_started", f"{TOPIC}:1"), ("action_completed", f"{TOPIC}:1")]


def test_an_adopted_move_found_in_place_tells_its_end_only(
    build: Callable[[FakeKafka], Executor],
) -> None:
    # Its predecessor told its start and did not live to tell its end: this instance does.
    kafka = FakeKafka({0: (2, 1, 4)}, {0: 2})
    ex = build(kafka)
    said = _told(ex)
    ex.submit([Move(TOPIC, 0, (2, 1, 4))], adopted=True)
    ex.step()
    assert said == [("action_completed", f"{TOPIC}:0")]


def test_a_reorder_is_done_when_the_metadata_shows_the_new_order(
    build: Callable[[FakeKafka], Executor],
) -> None:
    kafka = FakeKafka({0: (4, 1, 2)}, {0: 4})
    ex = build(kafka)
    ex.submit([Move(TOPIC, 0, (1, 2, 4))])
    ex.step()  # the reorder is issued
    assert ex.states[(TOPIC, 0)].status == "in_flight"
    kafka.lag_reads = 2  # the next two reads still show [4, 1, 2]: same set, old order
    ex.step()
    assert ex.states[(TOPIC, 0)].status == "in_flight", "judged done on the replica set alone"
    assert kafka.leaders[0] == 4
    ex.step()
    ex.step()  # the metadata now shows [1, 2, 4]: the election is asked
    ex.step()  # and broker 1 is read leading
    state = ex.states[(TOPIC, 0)]
    assert state.status == "completed", state.error
    assert kafka.leaders[0] == 1
    assert state.details["preferred_leader_election"] == "broker 1 leads"


def test_a_reorder_the_metadata_never_shows_fails_after_the_settle_time(
    build: Callable[[FakeKafka], Executor], monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [0.0]
    kafka = FakeKafka({0: (4, 1, 2)}, {0: 4})
    monkeypatch.setattr(executor_module, "AdminCalls", lambda *a, **k: FakeCalls(kafka))
    ex = Executor("unused:9092", ExecutorConfig(throttle_bytes_per_s=None), clock=lambda: now[0])
    ex.submit([Move(TOPIC, 0, (1, 2, 4))])
    ex.step()
    kafka.lag_reads = 1_000
    ex.step()
    now[0] = executor_module.METADATA_SETTLE_S + 1
    ex.step()
    state = ex.states[(TOPIC, 0)]
    assert state.status == "failed"
    assert state.error == "reassignment ended with replicas [4, 1, 2]"


def test_a_queued_move_to_a_broker_a_move_stalled_on_fails_for_the_replan(
    build: Callable[[FakeKafka], Executor],
) -> None:
    # Planned before the stall: the replan, which keeps broker 4 out, goes elsewhere.
    kafka = FakeKafka({0: (2, 1, 3), 1: (1, 2, 4), 2: (4, 1, 2)}, {0: 2, 1: 1, 2: 4})
    ex = build(kafka)
    ex.watchdog.exclude([4])
    ex.submit([Move(TOPIC, 0, (2, 1, 4)), Move(TOPIC, 1, (2, 1, 4)), Move(TOPIC, 2, (4, 1, 3))])
    ex.step()
    moved, kept = ex.states[(TOPIC, 0)], ex.states[(TOPIC, 1)]
    assert (moved.status, moved.error) == ("failed", "broker 4 stalled a move")
    # Broker 4 leads partition 2: its new replica on broker 3 would copy from it.
    led = ex.states[(TOPIC, 2)]
    assert (led.status, led.error) == ("failed", "broker 4 stalled a move")
    assert kafka.replicas[0] == (2, 1, 3)
    # Broker 4 already holds partition 1: a reorder there moves no data to it.
    assert kept.status == "in_flight", kept.error


# Issue 39.3: a demote whose election does not take says why, for each partition.


def _demote(kafka: FakeKafka, monkeypatch: pytest.MonkeyPatch, now: list[float]) -> Executor:
    monkeypatch.setattr(executor_module, "AdminCalls", lambda *a, **k: FakeCalls(kafka))
    ex = Executor("unused:9092", ExecutorConfig(throttle_bytes_per_s=None), clock=lambda: now[0])
    ex.submit([Move(TOPIC, 0, (2, 1, 4))])
    return ex


def test_a_preferred_leader_out_of_the_isr_is_not_elected_and_the_move_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kafka = FakeKafka({0: (2, 1, 4)}, {0: 4})
    kafka.out_of_sync = {2}
    ex = _demote(kafka, monkeypatch, [0.0])
    ex.step()
    state = ex.states[(TOPIC, 0)]
    assert kafka.elections == []
    assert (state.status, state.error) == (
        "failed",
        "broker 2 did not take leadership: not asked: broker 2 is not in the ISR [1, 4]",
    )


def test_an_election_kafka_refuses_fails_the_move_with_kafkas_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kafka = FakeKafka({0: (2, 1, 4)}, {0: 4})
    kafka.election_error = PreferredLeaderNotAvailableError("partition t-0")
    ex = _demote(kafka, monkeypatch, [0.0])
    ex.step()
    state = ex.states[(TOPIC, 0)]
    assert state.status == "failed"
    assert state.error is not None and state.error.startswith(
        "broker 2 did not take leadership: the election failed: PreferredLeaderNotAvailableError"
    ), state.error


def test_an_election_taken_without_an_error_is_checked_against_who_leads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]
    kafka = FakeKafka({0: (2, 1, 4)}, {0: 4})
    kafka.election_ignored = True
    ex = _demote(kafka, monkeypatch, now)
    ex.step()
    state = ex.states[(TOPIC, 0)]
    assert state.status == "in_flight"
    ex.step()  # broker metadata may lag: not judged yet
    assert state.status == "in_flight"
    now[0] = executor_module.METADATA_SETTLE_S + 1
    ex.step()
    assert (state.status, state.error) == (
        "failed",
        "broker 2 did not take leadership: Kafka took the election without an error, but "
        "broker 4 leads",
    )


def test_a_heal_whose_election_fails_is_still_a_completed_move(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its replicas are in place (redundancy restored); the election's outcome is told."""
    kafka = FakeKafka({0: (4, 1, 3)}, {0: 4})
    kafka.out_of_sync = {2}
    monkeypatch.setattr(executor_module, "AdminCalls", lambda *a, **k: FakeCalls(kafka))
    ex = Executor("unused:9092", ExecutorConfig(throttle_bytes_per_s=None), clock=lambda: 0.0)
    ex.submit([Move(TOPIC, 0, (2, 1, 3))])
    ex.step()  # issued
    ex.step()  # in place; broker 2 out of the ISR: no election asked
    state = ex.states[(TOPIC, 0)]
    assert state.status == "completed", state.error
    assert state.details["preferred_leader_election"] == (
        "not asked: broker 2 is not in the ISR [1, 3]"
    )


# Issue 41: the write budget the throttling gives is the one the moves start within.


def _three_copies_into_broker_4(
    build: Callable[[FakeKafka], Executor],
) -> tuple[FakeKafka, Executor, list[Move]]:
    kafka = FakeKafka({0: (1, 2), 1: (1, 2), 2: (2, 1)}, {0: 1, 1: 1, 2: 2})
    kafka.keep_running = True
    moves = [Move(TOPIC, p, (*kafka.replicas[p], 4)) for p in range(3)]
    return kafka, build(kafka), moves


def test_moves_start_within_the_write_budget_the_throttling_gives(
    build: Callable[[FakeKafka], Executor], monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka, ex, moves = _three_copies_into_broker_4(build)
    budget = WriteBudget(
        {m.tp: 1e6 for m in moves}, {(4, FOLLOWER_RATE): 1.5e6}, frozenset({(TOPIC, 2)})
    )
    monkeypatch.setattr(
        ex.throttling, "admission", lambda waiting, *_: (list(waiting), budget, None)
    )
    ex.submit(moves)
    ex.step()
    # Partition 0: broker 4's first copy; 1: its writes would take broker 4 over 1.5 MB/s;
    # 2: under min.insync.replicas, never held.
    assert [ex.states[m.tp].status for m in moves] == ["in_flight", "pending", "in_flight"]
    assert kafka.requests == [{0: (1, 2, 4), 2: (2, 1, 4)}]


def test_moves_start_within_the_copies_into_a_broker_the_throttling_gives(
    build: Callable[[FakeKafka], Executor], monkeypatch: pytest.MonkeyPatch
) -> None:
    kafka, ex, moves = _three_copies_into_broker_4(build)
    into = IntoLimit(1, frozenset({(TOPIC, 2)}))
    monkeypatch.setattr(ex.throttling, "admission", lambda waiting, *_: (list(waiting), None, into))
    ex.submit(moves)
    ex.step()
    # Partition 0: broker 4's one copy; 1: a second copy into broker 4 waits; 2: under
    # min.insync.replicas, never held.
    assert [ex.states[m.tp].status for m in moves] == ["in_flight", "pending", "in_flight"]
    assert kafka.requests == [{0: (1, 2, 4), 2: (2, 1, 4)}]


def test_a_partition_moved_by_an_earlier_plan_is_judged_once_in_the_next(
    build: Callable[[FakeKafka], Executor],
) -> None:
    # Found by the 60-minute shaped soak: every plan appended its partitions to the start
    # order and none was ever dropped, so a partition moved by three plans was judged three
    # times at each step of the fourth: 101 moves to a broker that had just died were told
    # failed twice (and once more for each earlier plan).
    kafka = FakeKafka({0: (1, 2, 3)}, {0: 1})
    ex = build(kafka)
    for target in ((1, 2, 4), (1, 2, 3), (1, 2, 4), (1, 2, 3)):  # the leader stays
        ex.submit([Move(TOPIC, 0, target)])
        ex.step()
        ex.step()
        assert ex.states[(TOPIC, 0)].status == "completed", ex.states[(TOPIC, 0)].error
    said = _told(ex)
    kafka.live = {1, 2, 3}
    ex.submit([Move(TOPIC, 0, (1, 2, 4))])
    ex.step()
    assert said == [("action_failed", f"{TOPIC}:0")]
    assert ex.states[(TOPIC, 0)].error == "destination broker 4 is not alive"


def test_a_move_that_fails_before_it_starts_says_so(
    build: Callable[[FakeKafka], Executor],
) -> None:
    kafka = FakeKafka({0: (1, 2, 3), 1: (1, 2, 3)}, {0: 1, 1: 1})
    kafka.live = {1, 2, 3}
    ex = build(kafka)
    told: list[tuple[str, dict[str, object]]] = []
    ex.on_event = lambda kind, state, details: told.append((kind, details))
    ex.submit([Move(TOPIC, 0, (1, 2, 4))])
    ex.submit([Move(TOPIC, 1, (1, 2, 4))], adopted=True)  # its start may have been told
    ex.step()
    reason = "destination broker 4 is not alive"
    assert told == [
        ("action_failed", {"reason": reason, "not_started": True}),
        ("action_failed", {"reason": reason}),
    ]
