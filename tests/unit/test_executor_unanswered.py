"""A reassignment request that goes unanswered: Kafka may have taken it or not. Found by
clean-clone CI: the executor's controller requests went to a hung (stopped, still registered)
broker, the request to move a partition to broker 4 timed out and was never taken, yet the
move was left "in flight"; the progress watchdog then sampled broker 4 holding 0 bytes of a
copy nobody had asked it for, cancelled the move and excluded broker 4 - blaming a healthy
broker. Now such a move is pending again until a read tells: listed as running or in place,
it started after all (one request, one ``action_started``); neither, it is asked again."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from executor_fakes import TOPIC, FakeCalls, FakeKafka

from kmedic.errors import KmedicError
from manager.executor import admin_calls as admin_calls_module
from manager.executor import executor as executor_module
from manager.executor.config import ExecutorConfig
from manager.executor.executor import Executor
from manager.executor.move_state import MoveState
from manager.executor.watchdog import Watchdog
from manager.model.moves import Move, TopicPartition

TP = (TOPIC, 0)


class Rig:
    """An executor over the fake, its events, and a clock the test moves."""

    def __init__(self, kafka: FakeKafka, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kafka = kafka
        self.now = 0.0
        self.events: list[tuple[str, dict[str, Any]]] = []
        monkeypatch.setattr(executor_module, "AdminCalls", lambda *a, **k: FakeCalls(kafka))
        config = ExecutorConfig(throttle_bytes_per_s=None, stall_s=4, progress_sample_s=0.001)
        self.ex = Executor(
            "unused:9092",
            config,
            on_event=self.record,
            clock=self.clock,
            wall_ms=self.wall_ms,
        )
        # Every broker answers, and no adding replica ever grows: a move Kafka runs would
        # stall; one it never took must not be judged at all.
        self.ex.watchdog = Watchdog(self.nothing_copied, config, self.clock, self.wall_ms)

    def clock(self) -> float:
        return self.now

    def wall_ms(self) -> int:
        return int(self.now * 1000)

    @staticmethod
    def nothing_copied(wanted: Any) -> dict[tuple[TopicPartition, int], int | None]:
        return {(tp, b): 0 for b, tps in wanted.items() for tp in tps}

    def record(self, kind: str, state: MoveState, details: dict[str, Any]) -> None:
        self.events.append((kind, details))

    def kinds(self) -> list[str]:
        return [k for k, _ in self.events]

    def step_after(self, seconds: float) -> None:
        self.now += seconds
        self.ex.step()

    @property
    def state(self) -> MoveState:
        return self.ex.states[TP]

    def status(self) -> str:
        return self.state.status


@pytest.fixture(autouse=True)
def metadata_from_the_fake(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        admin_calls_module, "describe_partitions", lambda kp, topics: kp.partitions(topics)
    )


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Rig]]:
    def make(*, applied: bool, keep_running: bool = True) -> Rig:
        kafka = FakeKafka({0: (1, 2)}, {0: 1})
        kafka.keep_running = keep_running
        kafka.unanswered = [applied]
        made = Rig(kafka, monkeypatch)
        made.ex.submit([Move(TOPIC, 0, (1, 4), 4 << 20)])
        with pytest.raises(KmedicError, match="RequestTimedOutError"):
            made.ex.step()
        # Neither started nor failed: whether Kafka took it, the next read tells.
        assert made.state.status == "pending", made.state.error
        assert made.state.unanswered is not None and "RequestTimedOut" in made.state.unanswered
        assert made.kinds() == []
        return made

    yield make


def test_a_request_kafka_never_took_is_asked_again_and_no_broker_is_blamed(
    rig: Callable[..., Rig],
) -> None:
    r = rig(applied=False)
    # Long past twice stall_s: had the move been judged in flight, broker 4 - holding none of
    # a copy it was never asked for - would be blamed, the move cancelled, broker 4 excluded.
    r.step_after(10)
    assert r.kafka.requests == [{0: (1, 4)}, {0: (1, 4)}]
    assert r.status() == "in_flight"
    assert r.kinds() == ["action_started"]
    assert "RequestTimedOut" in r.events[0][1]["unanswered"]
    assert r.state.unanswered is None
    assert r.ex.stalled_destinations() == {}
    r.kafka.finish()
    r.step_after(1)
    assert r.status() == "completed", r.state.error
    assert r.kinds() == ["action_started", "action_completed"]


def test_a_request_kafka_took_without_an_answer_is_tracked_not_asked_twice(
    rig: Callable[..., Rig],
) -> None:
    r = rig(applied=True)
    r.step_after(1)
    assert r.kafka.requests == [{0: (1, 4)}]
    assert r.status() == "in_flight"
    assert r.kinds() == ["action_started"]
    assert r.events[0][1]["confirmed"] == "Kafka lists its reassignment"
    assert r.state.original == (1, 2)
    # From here on it is a running move like any other: the watchdog judges it.
    r.step_after(5)
    assert r.kinds()[-1] == "alert_raised"
    r.kafka.finish()
    r.step_after(1)
    assert r.status() == "completed", r.state.error


def test_a_request_kafka_took_and_finished_is_started_then_completed(
    rig: Callable[..., Rig],
) -> None:
    r = rig(applied=True, keep_running=False)
    r.step_after(1)
    assert r.kafka.requests == [{0: (1, 4)}]
    assert r.status() == "completed", r.state.error
    assert r.kinds() == ["action_started", "action_completed"]
    assert r.events[0][1]["confirmed"] == "its replicas are in place"


def test_a_request_kafka_took_to_a_broker_that_died_since_is_cancelled(
    rig: Callable[..., Rig],
) -> None:
    r = rig(applied=True)
    r.kafka.live.discard(4)
    r.step_after(1)
    assert r.kafka.requests == [{0: (1, 4)}, {0: None}]
    assert r.kafka.ongoing == {}
    assert r.status() == "failed"
    assert r.state.error == "destination broker 4 is not alive"


def test_a_move_whose_reassignment_just_ended_is_not_asked_for_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the soak (seed 7): a leader adopting the stored plan as a broker restarted read
    the partition with the target's replicas and the one being removed, and no reassignment
    listed - Kafka had just finished it, and the broker that answered still showed the old
    set. It asked for the reassignment again and audited a second start of the move."""
    kafka = FakeKafka({0: (1, 4)}, {0: 1})
    kafka.shown = {0: (1, 4, 2)}  # the controller finished; this broker's metadata lags
    kafka.lag_reads = 2
    r = Rig(kafka, monkeypatch)
    r.ex.submit([Move(TOPIC, 0, (1, 4), 4 << 20)], adopted=True)  # its start told before
    r.step_after(1)
    assert (r.kafka.requests, r.status(), r.kinds()) == ([], "pending", [])
    r.step_after(1)
    r.step_after(1)  # the read settles: the replicas are the target's
    assert r.kafka.requests == []
    assert r.status() == "completed", r.state.error
    assert r.kinds() == ["action_completed"]
