"""The streaming job's restart loop (streaming.supervise) and its config, without Spark: the
start and wait steps are plain functions, the clock and the sleep are recorded."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kmedic.errors import KmedicError
from streaming.config import RestartConfig, StreamConfig
from streaming.supervise import QueryFailed, RestartPolicy, backoff_s, gives_up, supervise

POLICY = RestartPolicy(
    initial_backoff_s=5, max_backoff_s=120, max_failures=None, healthy_after_s=120
)


class Script:
    """A job whose runs fail or finish as scripted; each run lasts ``run_s`` on a fake clock."""

    def __init__(self, outcomes: list[str], run_s: float = 1.0) -> None:
        self.outcomes = list(outcomes)
        self.run_s = run_s
        self.now = 0.0
        self.starts = 0
        self.sleeps: list[float] = []

    def start(self) -> list[str]:
        self.starts += 1
        return [f"run-{self.starts}"]

    def wait(self, queries: list[str]) -> None:
        self.now += self.run_s
        outcome = self.outcomes.pop(0)
        if outcome == "fail":
            raise QueryFailed(f"query kmedic-loads failed in {queries[0]}: TimeoutException")
        if outcome == "boom":
            raise KmedicError("the checkpoint is unreadable")

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def run(self, policy: RestartPolicy = POLICY) -> int:
        return supervise(self.start, self.wait, policy, sleep=self.sleep, clock=lambda: self.now)


def test_a_run_that_finishes_is_not_restarted() -> None:
    job = Script(["done"])
    assert job.run() == 0
    assert job.starts == 1 and job.sleeps == []


def test_failed_queries_start_again_with_a_doubling_capped_backoff() -> None:
    job = Script(["fail"] * 7 + ["done"])
    assert job.run() == 7
    assert job.starts == 8
    assert job.sleeps == [5, 10, 20, 40, 80, 120, 120]


def test_each_restart_is_reported() -> None:
    job = Script(["fail", "fail", "done"])
    seen: list[int] = []
    supervise(
        job.start,
        job.wait,
        POLICY,
        sleep=job.sleep,
        clock=lambda: job.now,
        on_restart=lambda: seen.append(job.starts),
    )
    assert seen == [1, 2]


def test_a_healthy_run_resets_the_backoff() -> None:
    # Two quick failures, then a run longer than healthy_after_s fails: back to 5 s.
    job = Script(["fail", "fail", "fail", "done"])
    runs = iter([1.0, 1.0, 500.0, 1.0])

    def wait(queries: list[str]) -> None:
        job.run_s = next(runs)
        Script.wait(job, queries)

    supervise(job.start, wait, POLICY, sleep=job.sleep, clock=lambda: job.now)
    assert job.sleeps == [5, 10, 5]


def test_it_gives_up_after_max_failures_in_a_row_naming_the_cause() -> None:
    policy = RestartPolicy(initial_backoff_s=1, max_backoff_s=4, max_failures=3, healthy_after_s=4)
    job = Script(["fail"] * 5)
    with pytest.raises(KmedicError, match="TimeoutException; giving up after 3 failures"):
        job.run(policy)
    assert job.starts == 3 and job.sleeps == [1, 2]


def test_errors_that_are_not_query_failures_are_not_retried() -> None:
    job = Script(["fail", "boom", "done"])
    with pytest.raises(KmedicError, match="checkpoint is unreadable"):
        job.run()
    assert job.starts == 2


def test_an_interrupt_during_the_backoff_ends_the_loop() -> None:
    job = Script(["fail", "done"])

    def interrupted(_seconds: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        supervise(job.start, job.wait, POLICY, sleep=interrupted, clock=lambda: job.now)
    assert job.starts == 1


@given(
    initial=st.floats(min_value=0.001, max_value=600),
    factor=st.floats(min_value=1, max_value=100),
    failures=st.integers(min_value=1, max_value=10_000),
)
def test_backoff_is_monotonic_and_within_bounds(
    initial: float, factor: float, failures: int
) -> None:
    policy = RestartPolicy(
        initial_backoff_s=initial,
        max_backoff_s=initial * factor,
        max_failures=None,
        healthy_after_s=initial * factor,
    )
    wait = backoff_s(policy, failures)
    assert initial <= wait <= policy.max_backoff_s
    assert backoff_s(policy, failures + 1) >= wait


@given(max_failures=st.integers(min_value=1, max_value=50), failures=st.integers(1, 100))
def test_gives_up_exactly_at_the_limit(max_failures: int, failures: int) -> None:
    policy = RestartPolicy(1, 2, max_failures, 2)
    assert gives_up(policy, failures) == (failures >= max_failures)
    assert not gives_up(RestartPolicy(1, 2, None, 2), failures)


def test_backoff_rejects_a_count_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        backoff_s(POLICY, 0)


def test_restart_defaults_keep_trying_with_5s_to_2m() -> None:
    policy = StreamConfig().restart.policy()
    assert policy == RestartPolicy(
        initial_backoff_s=5, max_backoff_s=120, max_failures=None, healthy_after_s=120
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"initial_backoff": "3m", "max_backoff": "1m"}, "initial_backoff 3m is longer"),
        ({"initial_backoff": "soon"}, "is not a duration"),
        ({"max_backoff": "0s"}, "longer than zero"),
        ({"max_failures": 0}, "greater than or equal to 1"),
        ({"retries": 3}, "Extra inputs"),
    ],
)
def test_bad_restart_settings_name_the_problem(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RestartConfig(**settings)
