"""The progress watchdog without I/O: its arithmetic (manager.model.move_progress), the
watchdog's sampling and verdict changes with a fake sampler and clocks, and the config rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kmedic.errors import KmedicError
from manager.executor.config import ExecutorConfig
from manager.executor.move_state import MoveState
from manager.executor.replica_sizes import sizes_on
from manager.executor.watchdog import Watchdog
from manager.model.move_progress import (
    MoveProgress,
    observe,
    stalled_brokers,
    verdict,
)
from manager.model.moves import Move, TopicPartition

STALL_MS = 10_000


def run(samples: list[tuple[int, dict[int, int | None]]]) -> MoveProgress:
    progress = None
    for at, sample in samples:
        progress = observe(progress, sample, at)
    assert progress is not None
    return progress


@given(
    st.lists(st.integers(min_value=1, max_value=STALL_MS - 1), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=10_000_000),
)
def test_a_move_that_gains_bytes_within_every_stall_period_is_never_judged_stalled(
    gaps: list[int], step_bytes: int
) -> None:
    # Slow but sure: however long it runs in total, it is never reported or cancelled.
    at, size = 0, 0
    progress = observe(None, {4: 0}, at)
    for gap in gaps:
        at += gap
        size += step_bytes
        progress = observe(progress, {4: size}, at)
        assert verdict(progress, at, STALL_MS) == "moving"


@given(
    st.integers(min_value=0, max_value=10**9),
    st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=10**9)), max_size=20),
    st.integers(min_value=0, max_value=4 * STALL_MS),
)
def test_no_byte_gained_means_stalled_after_one_period_and_cancel_after_two(
    first: int, later: list[int | None], idle: int
) -> None:
    # Samples no larger than the first (or unanswered) never count as progress.
    progress = observe(None, {4: first}, 0)
    for i, size in enumerate(later):
        progress = observe(progress, {4: None if size is None else min(size, first)}, i)
    assert progress.advanced_ms == 0
    expected = "cancel" if idle >= 2 * STALL_MS else "stalled" if idle >= STALL_MS else "moving"
    assert verdict(progress, idle, STALL_MS) == expected


def test_a_brokers_first_answer_is_a_baseline_not_an_advance() -> None:
    # Broker 4 did not answer at first (stopped); its first answer says nothing of when.
    progress = run([(0, {4: None}), (5_000, {4: 700})])
    assert progress.advanced_ms == 0
    assert progress.copied == {4: 700}
    assert run([(0, {4: None}), (5_000, {4: 700}), (6_000, {4: 701})]).advanced_ms == 6_000


def test_one_growing_replica_of_two_is_progress() -> None:
    progress = run([(0, {4: 0, 5: 0}), (3_000, {4: 0, 5: 100})])
    assert progress.advanced_ms == 3_000
    assert progress.copied_bytes == 100


def test_the_replicas_behind_are_blamed_or_all_when_none_is_ahead() -> None:
    assert stalled_brokers(MoveProgress(0, {4: 900, 5: 100}), (4, 5)) == (5,)
    assert stalled_brokers(MoveProgress(0, {4: 0, 5: 0}), (4, 5)) == (4, 5)
    assert stalled_brokers(MoveProgress(0, {}), (4,)) == (4,)


@given(
    st.integers(min_value=0, max_value=2**62),
    st.dictionaries(st.integers(0, 10_000), st.integers(0, 2**62), max_size=5),
)
def test_the_record_survives_the_stored_plan(advanced: int, copied: dict[int, int]) -> None:
    record = MoveProgress(advanced, copied)
    assert MoveProgress.from_field(record.to_field()) == record


@pytest.mark.parametrize(
    "raw",
    [
        None,
        {},
        {"advanced_ms": "soon"},
        {"advanced_ms": 1, "copied": {"x": 1}},
        {"advanced_ms": -1},
    ],
)
def test_a_malformed_stored_record_is_an_error_that_shows_it(raw: Any) -> None:
    with pytest.raises(KmedicError, match="stored move progress"):
        MoveProgress.from_field(raw)


def test_log_dir_sizes_are_read_per_partition_without_future_replicas() -> None:
    result = [
        {
            "broker": 4,
            "log_dirs": [
                {
                    "log_dir": "/d1",
                    "topics": [
                        {
                            "name": "t",
                            "partitions": [
                                {"partition_index": 0, "partition_size": 10},
                                {"partition_index": 1, "partition_size": 5, "is_future_key": True},
                            ],
                        }
                    ],
                },
                {
                    "log_dir": "/d2",
                    "topics": [
                        {"name": "t", "partitions": [{"partition_index": 1, "partition_size": 7}]}
                    ],
                },
            ],
        },
        {"broker": 5, "log_dirs": [{"topics": [{"name": "t", "partitions": []}]}]},
    ]
    assert sizes_on(result, 4) == {("t", 0): 10, ("t", 1): 7}
    assert sizes_on(result, 5) == {}


# -- the watchdog with a fake sampler ---------------------------------------------------------


class Fake:
    def __init__(self) -> None:
        self.now = 0.0
        self.sizes: dict[tuple[TopicPartition, int], int | None] = {}
        self.asked: list[dict[int, list[TopicPartition]]] = []

    def sample(
        self, adding: Mapping[int, Iterable[TopicPartition]]
    ) -> dict[tuple[TopicPartition, int], int | None]:
        self.asked.append({b: list(tps) for b, tps in adding.items()})
        return {(tp, b): self.sizes.get((tp, b), 0) for b, tps in adding.items() for tp in tps}


LEADERS = {("t", 0): 1}


def watchdog(fake: Fake, **config: Any) -> Watchdog:
    cfg = ExecutorConfig(throttle_bytes_per_s=None, stall_s=10, progress_sample_s=2, **config)
    return Watchdog(fake.sample, cfg, lambda: fake.now, lambda: int(fake.now * 1000))


def flying(topic: str, target: tuple[int, ...]) -> MoveState:
    return MoveState(Move(topic, 0, target, 1000), status="in_flight", original=(1, 2))


def test_the_watchdog_reports_a_stall_once_then_asks_to_cancel_and_blames_the_destination() -> None:
    fake = Fake()
    dog = watchdog(fake)
    move = flying("t", (1, 4))
    ongoing = {("t", 0): {"replicas": [1, 4, 2], "adding_replicas": [4], "removing_replicas": [2]}}
    fake.sizes[(("t", 0), 4)] = 0
    seen = []
    for second in range(0, 31):
        fake.now = float(second)
        for change in dog.watch([move] if move.status == "in_flight" else [], ongoing, LEADERS):
            seen.append((second, change.verdict, change.blamed, round(change.idle_s)))
            move.stalled = change.verdict != "moving"
            if change.verdict == "cancel":
                move.status = "cancelled"  # what the executor does with it
    assert fake.asked[0] == {4: [("t", 0)], 1: [("t", 0)]}  # the leader too
    assert len(fake.asked) == 11  # every progress_sample_s (0, 2, ... 20 s), not every call
    assert seen == [(10, "stalled", (4,), 10), (20, "cancel", (4,), 20)]


def test_a_reported_move_that_copies_again_is_said_to_move_again() -> None:
    fake = Fake()
    dog = watchdog(fake)
    move = flying("t", (1, 4))
    ongoing = {("t", 0): {"replicas": [1, 4, 2], "adding_replicas": [4]}}
    fake.sizes[(("t", 0), 4)] = 0
    verdicts = []
    for second in range(0, 17, 2):
        fake.now = float(second)
        if second == 14:
            fake.sizes[(("t", 0), 4)] = 5
        for change in dog.watch([move], ongoing, LEADERS):
            verdicts.append((second, change.verdict))
            move.stalled = change.verdict != "moving"
    assert verdicts == [(10, "stalled"), (14, "moving")]


def test_a_move_that_copies_nothing_is_not_watched() -> None:
    fake = Fake()
    dog = watchdog(fake)
    reorder = flying("t", (2, 1))
    ongoing = {("t", 0): {"replicas": [2, 1], "adding_replicas": []}}
    for second in range(0, 60, 2):
        fake.now = float(second)
        assert dog.watch([reorder], ongoing, LEADERS) == []
    assert fake.asked == []
    assert reorder.progress is None


def test_excluded_destinations_expire_after_stall_exclude_s() -> None:
    fake = Fake()
    dog = watchdog(fake, stall_exclude_s=60)
    fake.now = 100.0
    dog.exclude([4])
    fake.now = 159.0
    assert dog.excluded() == {4: 100_000}
    fake.now = 160.5
    assert dog.excluded() == {}


def test_the_wall_clock_timeout_keys_are_refused_with_what_replaced_them() -> None:
    with pytest.raises(ValidationError, match="progress watchdog replaced"):
        ExecutorConfig.model_validate({"move_timeout_s": 3600, "cancel_on_timeout": True})


def test_a_stall_period_shorter_than_a_throttled_fetch_is_refused() -> None:
    with pytest.raises(ValidationError, match="stall_s 60 is too short"):
        ExecutorConfig(throttle_bytes_per_s=10_000, stall_s=60)
    assert ExecutorConfig(throttle_bytes_per_s=10_000_000, stall_s=1).stall_s == 1
    assert ExecutorConfig(throttle_bytes_per_s=None, stall_s=1).stall_s == 1
    # Adaptive: checked against its floor, the slowest rate a move may get.
    slow_floor = {"floor_bytes_per_s": 10_000}
    with pytest.raises(ValidationError, match="stall_s 60 is too short"):
        ExecutorConfig(throttle_bytes_per_s="adaptive", adaptive=slow_floor, stall_s=60)
    assert ExecutorConfig(throttle_bytes_per_s="adaptive", stall_s=1).stall_s == 1


@pytest.mark.parametrize(
    ("stall_s", "rate", "bound"), [(0.04, 50_000_000, "0.042"), (200, 10_000, "210")]
)
def test_the_refusal_names_a_stall_period_that_it_would_take(
    stall_s: float, rate: int, bound: str
) -> None:
    # Shown rounded to whole seconds, 0.042 was "use stall_s >= 0": a bound it refused again.
    with pytest.raises(ValidationError, match=f"use stall_s >= {bound} ") as refused:
        ExecutorConfig(throttle_bytes_per_s=rate, stall_s=stall_s)
    assert "use stall_s >= 0 " not in str(refused.value)
    assert ExecutorConfig(throttle_bytes_per_s=rate, stall_s=float(bound)).stall_s == float(bound)


def test_a_watchdog_that_cannot_ask_never_reports_or_cancels() -> None:
    # A refusal or no client at all leaves the broker out of the sample: nothing is judged,
    # however long it lasts - unlike a broker that does not answer (None), which stalls.
    class Blind(Fake):
        def sample(
            self, adding: Mapping[int, Iterable[TopicPartition]]
        ) -> dict[tuple[TopicPartition, int], int | None]:
            super().sample(adding)
            return {}

    fake = Blind()
    dog = watchdog(fake)
    move = flying("t", (1, 4))
    ongoing = {("t", 0): {"replicas": [1, 4, 2], "adding_replicas": [4]}}
    for second in range(0, 120, 2):
        fake.now = float(second)
        assert dog.watch([move], ongoing, LEADERS) == []
    assert len(fake.asked) == 60
    assert move.progress is not None and move.progress.advanced_ms == 118_000
    silent = Fake()  # the same broker answering nothing (None) is a stall
    dog = watchdog(silent)
    silent.sizes[(("t", 0), 4)] = None
    move = flying("t", (1, 4))
    verdicts = []
    for second in range(0, 21, 2):
        silent.now = float(second)
        verdicts += [c.verdict for c in dog.watch([move], ongoing, LEADERS)]
        move.stalled = bool(verdicts)
    assert verdicts == ["stalled", "cancel"]


def test_a_leader_that_does_not_answer_is_blamed_not_the_replica_copying_from_it() -> None:
    fake = Fake()
    dog = watchdog(fake)
    move = flying("t", (1, 4))
    ongoing = {("t", 0): {"replicas": [1, 4, 2], "adding_replicas": [4]}}
    fake.sizes[(("t", 0), 1)] = None  # broker 1 leads, and hangs
    blamed = []
    for second in range(0, 21, 2):
        fake.now = float(second)
        for change in dog.watch([move], ongoing, LEADERS):
            blamed.append((change.verdict, change.blamed))
            move.stalled = True
    assert blamed == [("stalled", (1,)), ("cancel", (1,))]
