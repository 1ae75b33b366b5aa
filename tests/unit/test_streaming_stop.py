"""How `kmedic stream` stops: a signal only sets an event, the poll loop sees it and stops the
queries. No Spark here: the queries are fakes with the StreamingQuery attributes the loop
reads. (CI once saw the job hang on SIGTERM: the old handler raised KeyboardInterrupt inside
a py4j call, leaving that connection out of step with the JVM.)"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from streaming import cli, job
from streaming.supervise import QueryFailed, RestartPolicy, supervise


class FakeQuery:
    """A running query; ``on_is_active`` runs inside each ``isActive`` read, the way a
    signal can arrive while the main thread waits on the JVM."""

    def __init__(self, name: str, on_is_active: Callable[[], None] | None = None) -> None:
        self.name = name
        self.active = True
        self.stops = 0
        self.failure: str | None = None
        self.stop_error: Exception | None = None
        self.on_is_active = on_is_active

    @property
    def isActive(self) -> bool:  # PySpark's name
        if self.on_is_active is not None:
            self.on_is_active()
        return self.active

    def exception(self) -> str | None:
        return self.failure

    def stop(self) -> None:
        self.stops += 1
        if self.stop_error is not None:
            raise self.stop_error
        self.active = False


@pytest.fixture
def signal_handlers() -> Iterator[threading.Event]:
    """cli's handlers installed for one test, the previous ones restored after."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    stop = threading.Event()
    cli._stop_on_signals(stop)
    try:
        yield stop
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def test_a_set_stop_ends_the_wait_and_stops_every_query() -> None:
    stop = threading.Event()
    queries: list[Any] = [FakeQuery("dlq"), FakeQuery("loads")]
    polls: list[int] = []
    threading.Timer(0.2, stop.set).start()
    job.await_queries(queries, poll_s=0.05, on_poll=lambda qs: polls.append(len(qs)), stop=stop)
    assert [q.stops for q in queries] == [1, 1]
    assert not any(q.active for q in queries)
    assert len(polls) >= 2  # polled while running, and once more at the end


def test_sigterm_inside_a_jvm_call_raises_nothing_there_and_stops_the_job(
    signal_handlers: threading.Event,
) -> None:
    sent: list[bool] = []

    def sigterm_once() -> None:
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)  # handled before os.kill returns

    queries: list[Any] = [FakeQuery("dlq", on_is_active=sigterm_once), FakeQuery("loads")]
    job.await_queries(queries, poll_s=0.05, stop=signal_handlers)  # no KeyboardInterrupt
    assert signal_handlers.is_set()
    assert [q.stops for q in queries] == [1, 1]


def test_a_second_signal_interrupts(signal_handlers: threading.Event) -> None:
    os.kill(os.getpid(), signal.SIGINT)
    assert signal_handlers.is_set()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)


def test_a_failed_query_still_raises_when_no_stop_was_asked() -> None:
    failed = FakeQuery("loads")
    failed.active = False
    failed.failure = "TimeoutException: Timeout of 60000ms expired\nat ..."
    other = FakeQuery("dlq")
    with pytest.raises(QueryFailed, match="query loads failed: TimeoutException: Timeout of"):
        job.await_queries([other, failed], poll_s=0.01, stop=threading.Event())
    assert other.stops == 1


def test_a_query_that_will_not_stop_does_not_keep_the_other_running(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stuck = FakeQuery("dlq")
    stuck.stop_error = RuntimeError("java.util.concurrent.TimeoutException: Stream Execution")
    other = FakeQuery("loads")
    queries: list[Any] = [stuck, other]
    job.stop_queries(queries)
    assert other.stops == 1 and not other.active
    assert "stream_query_not_stopped" in capsys.readouterr().err


POLICY = RestartPolicy(
    initial_backoff_s=60, max_backoff_s=60, max_failures=None, healthy_after_s=60
)


def test_a_stop_during_the_backoff_ends_it_early_and_starts_nothing() -> None:
    stop = threading.Event()
    starts: list[int] = []

    def start() -> list[str]:
        starts.append(1)
        return ["run"]

    def fail(_queries: list[str]) -> None:
        threading.Timer(0.1, stop.set).start()
        raise QueryFailed("query kmedic-loads failed: TimeoutException")

    assert supervise(start, fail, POLICY, stop=stop) == 0  # returns in 0.1 s, not 60
    assert starts == [1]


def test_a_stop_before_the_start_starts_nothing() -> None:
    stop = threading.Event()
    stop.set()

    def start() -> list[str]:
        raise AssertionError("started after a stop")

    assert supervise(start, lambda _q: None, POLICY, stop=stop) == 0


class _GoneSpark:
    def stop(self) -> None:
        raise ConnectionRefusedError(111, "Connection refused")


def test_a_jvm_that_got_the_signal_too_is_not_an_error_when_stopping(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli.stop_spark(_GoneSpark(), already_going=True)
    assert "spark_already_stopped" in capsys.readouterr().err


def test_a_jvm_gone_without_a_stop_request_is_an_error() -> None:
    with pytest.raises(ConnectionRefusedError):
        cli.stop_spark(_GoneSpark(), already_going=False)


class FakeSession:
    """The part of a SparkSession that clear_leftovers reads: ``streams.active``."""

    def __init__(self, *queries: FakeQuery) -> None:
        self.queries = list(queries)

    @property
    def streams(self) -> FakeSession:
        return self

    @property
    def active(self) -> list[FakeQuery]:
        return [q for q in self.queries if q.active]


def test_a_leftover_query_of_a_failed_run_is_stopped_before_the_next_start() -> None:
    # CI saw this: the DLQ query's stop timed out (its write blocked on a dead broker), and the
    # restart died on "a query with that name is already active in this SparkSession".
    leftover = FakeQuery(job.LOADS_QUERY)
    other = FakeQuery("someone-elses-query")
    job.clear_leftovers(FakeSession(leftover, other))  # type: ignore[arg-type]
    assert (leftover.active, leftover.stops) == (False, 1)
    assert (other.active, other.stops) == (True, 0)


def test_a_leftover_that_still_will_not_stop_is_a_failed_start_the_supervisor_retries() -> None:
    leftover = FakeQuery(job.LOADS_QUERY)
    leftover.stop_error = RuntimeError("An error occurred while calling o2560.stop.")
    session = FakeSession(leftover)
    started: list[list[FakeQuery]] = []
    sleeps: list[float] = []

    def start() -> list[FakeQuery]:
        job.clear_leftovers(session)  # type: ignore[arg-type]
        started.append([FakeQuery(job.LOADS_QUERY)])
        return started[-1]

    def pause(seconds: float) -> None:
        sleeps.append(seconds)
        leftover.stop_error = None  # its blocked write gave up meanwhile

    with pytest.raises(QueryFailed, match="kmedic-loads of the previous run"):
        start()
    leftover.stop_error = RuntimeError("still blocked")
    restarts = supervise(start, lambda _: None, POLICY, sleep=pause)
    assert (restarts, sleeps, len(started), leftover.active) == (1, [60], 1, False)
