"""The run loop: one record per interval, chunking, survival of a crashing sample, flush on stop.

Sources and producer are in-memory stand-ins here; tests/integration/test_agent_cli.py runs the
real process against the real cluster.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from agent.config import AgentConfig
from agent.loop import Agent
from agent.record import Header, failure_record
from kmedic import brokerstats as bs

CONFIG = AgentConfig.model_validate(
    {
        "broker_id": 7,
        "bootstrap": "127.0.0.1:1",
        "exporter_url": "http://127.0.0.1:1/metrics",
        "interval_s": 0.5,
        "metrics_port": None,
        "create_topic": False,
    }
)


def _record(n: int) -> bs.BrokerStats:
    header = Header("c", 7, "h", "/r", 1_700_000_000_000 + n, 0.5, "v", None)
    failure = bs.Failure(reason="exporter_unreachable", message=f"sample {n}")
    return failure_record(header, failure, [])


class ScriptedSampler:
    def __init__(self) -> None:
        self.calls = 0
        self.closed = False

    def sample(self) -> bs.BrokerStats:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("unexpected")
        return _record(self.calls)

    def close(self) -> None:
        self.closed = True

    def probe(self) -> None:
        pass


class MemoryPublisher:
    def __init__(self) -> None:
        self.published: list[bs.BrokerStats] = []
        self.flushed = False

    def publish(self, record: bs.BrokerStats, value: bytes | None = None) -> bool:
        assert value is None or value == bs.to_json(record)
        self.published.append(record)
        return True

    def poll(self, timeout_s: float = 0.0) -> None:
        time.sleep(timeout_s)

    def flush(self, timeout_s: float) -> int:
        self.flushed = True
        return 0


def test_loop_keeps_its_grid_survives_a_crash_and_flushes_on_stop() -> None:
    sampler, publisher = ScriptedSampler(), MemoryPublisher()
    seen: list[bs.BrokerStats] = []
    agent = Agent(CONFIG, sampler=sampler, publisher=publisher, on_record=seen.append)  # type: ignore[arg-type]
    stop = threading.Event()
    thread = threading.Thread(target=agent.run, args=(stop,))
    started = time.monotonic()
    thread.start()
    while sampler.calls < 4 and time.monotonic() - started < 10:
        time.sleep(0.05)
    stop.set()
    thread.join(timeout=10)
    elapsed = time.monotonic() - started
    assert not thread.is_alive()
    assert sampler.calls >= 4  # the crash in call 2 did not end the loop
    assert elapsed >= 1.5  # four samples on a 0.5 s grid
    assert [r.failure.message for r in publisher.published if r.failure][:2] == [
        "sample 1",
        "sample 3",
    ]
    assert seen == publisher.published
    assert publisher.flushed and sampler.closed
    samples = agent.metrics.samples.labels(broker="7", outcome="failed")._value.get()
    assert samples == len(publisher.published)


def test_large_sample_is_published_in_chunks() -> None:
    record = _record(1)
    leader = bs.LeaderReplica(
        topic="t" * 100,
        partition=0,
        bytes_in_per_s=1.0,
        bytes_out_per_s=1.0,
        messages_in_per_s=1.0,
        log_size_bytes=1,
        log_start_offset=0,
        log_end_offset=1,
        estimate="size_delta",
    )
    big = record.model_copy(
        update={
            "failure": None,
            "leaders": [leader.model_copy(update={"partition": i}) for i in range(500)],
        }
    )

    class OneShot:
        def sample(self) -> bs.BrokerStats:
            return big

        def close(self) -> None:
            pass

    publisher = MemoryPublisher()
    config = CONFIG.model_copy(update={"max_record_bytes": 20_000})
    agent: Any = Agent(config, sampler=OneShot(), publisher=publisher)  # type: ignore[arg-type]
    chunks = agent.run_once()
    assert len(chunks) > 1 and publisher.published == chunks
    assert all(len(bs.to_json(c)) <= 20_000 for c in chunks)
    assert sum(len(c.leaders) for c in chunks) == 500


class Reassigning:
    """A sampler whose broker takes part in a reassignment from its second sample on, until
    its fourth."""

    def __init__(self) -> None:
        self.calls = 0

    def sample(self) -> bs.BrokerStats:
        self.calls += 1
        record = _record(self.calls)
        if 2 <= self.calls <= 3:
            moving = bs.ReassigningReplica(
                topic="t", partition=0, replicas=[7, 8], adding_replicas=[8], removing_replicas=[]
            )
            record = record.model_copy(update={"reassigning": [moving]})
        return record


def test_the_agent_samples_faster_while_its_broker_takes_part_in_a_move() -> None:
    config = CONFIG.model_copy(update={"interval_s": 60.0, "busy_interval_s": 5.0})
    agent = Agent(config, sampler=Reassigning(), publisher=MemoryPublisher())  # type: ignore[arg-type]
    waits = []
    for _ in range(4):
        agent.run_once()
        waits.append(agent.interval_s)
    assert waits == [60.0, 5.0, 5.0, 60.0]
    # Never slower than the configured interval.
    quick = CONFIG.model_copy(update={"interval_s": 2.0, "busy_interval_s": 5.0})
    agent = Agent(quick, sampler=Reassigning(), publisher=MemoryPublisher())  # type: ignore[arg-type]
    agent.run_once()
    agent.run_once()
    assert agent.interval_s == 2.0


def test_between_whole_records_a_busy_sample_lists_only_the_moving_partitions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At the busy interval the agent sends the moving partitions' entries only (scope
    moving, version 2); a whole record at least every interval_s, and the first sample after
    the move (it says where every replica is now). A failed sample is never cut."""
    import agent.loop as loop

    clock = [1000.0]
    monkeypatch.setattr(loop.time, "monotonic", lambda: clock[0])

    class Moving:
        def __init__(self) -> None:
            self.calls = 0

        def sample(self) -> bs.BrokerStats:
            self.calls += 1
            record = _record(self.calls)
            leaders = [
                bs.LeaderReplica(
                    topic="t",
                    partition=p,
                    bytes_in_per_s=1.0,
                    bytes_out_per_s=1.0,
                    messages_in_per_s=1.0,
                    log_size_bytes=10,
                    log_start_offset=0,
                    log_end_offset=1,
                    estimate="size_delta",
                )
                for p in range(3)
            ]
            moving = bs.ReassigningReplica(
                topic="t", partition=0, replicas=[7, 8], adding_replicas=[8], removing_replicas=[]
            )
            busy = 2 <= self.calls <= 16
            return record.model_copy(
                update={
                    "failure": None,
                    "leaders": leaders,
                    "reassigning": [moving] if busy else [],
                }
            )

    config = CONFIG.model_copy(update={"interval_s": 60.0, "busy_interval_s": 5.0})
    agent = Agent(config, sampler=Moving(), publisher=MemoryPublisher())  # type: ignore[arg-type]
    scopes = []
    for _ in range(17):
        (chunk,) = agent.run_once()
        scopes.append((chunk.scope, chunk.schema_version, len(chunk.leaders)))
        clock[0] += agent.interval_s
    whole, light = ("all", 1, 3), ("moving", 2, 1)
    # 1: quiet; 2: the first busy sample is still whole (the last whole one was 60 s ago);
    # then 5 s apart until 60 s after it; 14: whole again; 17: the move over, whole.
    assert scopes == [whole, whole, *[light] * 11, whole, light, light, whole], scopes
    # Sampling no faster while busy (interval_s at or under busy_interval_s): always whole,
    # whatever a sample's start drifts.
    slow = CONFIG.model_copy(update={"interval_s": 2.0, "busy_interval_s": 5.0})
    agent = Agent(slow, sampler=Moving(), publisher=MemoryPublisher())  # type: ignore[arg-type]
    for drift in (0.0, 2.0, 3.998, 5.999, 8.0):
        clock[0] = 5000.0 + drift
        (chunk,) = agent.run_once()
        assert chunk.scope == "all", (drift, chunk.scope)


def test_the_agent_samples_faster_while_its_broker_is_not_running() -> None:
    """A restart's start, its log recovery and an exit are seen at the busy rate: the
    manager's evidence for waiting on a restart rather than healing it."""
    states: list[bs.ProcessState | None] = [
        "running", "not_running", "starting", "recovering", "running", "unknown", None,
    ]  # fmt: skip
    assert _waits(states) == [60.0, 5.0, 5.0, 5.0, 60.0, 60.0, 60.0]


def _waits(states: list[bs.ProcessState | None]) -> list[float]:
    """The agent's wait after each sample of a broker in ``states`` (None: no process seen)."""

    class Sampler:
        def __init__(self) -> None:
            self.states = list(states)

        def sample(self) -> bs.BrokerStats:
            state = self.states.pop(0)
            record = _record(len(self.states))
            if state is None:
                return record
            process = bs.Process(
                state=state, broker_state=None, logs_to_recover=None, segments_to_recover=None,
                listening=None, down_since_ms=None, restarts=0, restart_window_s=600.0,
            )  # fmt: skip
            return record.model_copy(update={"process": process})

        def close(self) -> None:
            pass

        def probe(self) -> None:
            pass

    config = CONFIG.model_copy(update={"interval_s": 60.0, "busy_interval_s": 5.0})
    agent = Agent(config, sampler=Sampler(), publisher=MemoryPublisher())  # type: ignore[arg-type]
    waits = []
    for _ in states:
        agent.run_once()
        waits.append(agent.interval_s)
    return waits


def test_a_start_whose_state_is_not_on_the_page_yet_is_watched_at_the_busy_rate() -> None:
    """A JVM seconds old answers before its BrokerState is on the page: "unknown" after "not
    running" is a start, watched every 5 s (bench_oracle: a crash loop's comebacks 13 s long
    went unseen between two samples a minute apart, the loop healed by the timer). "unknown"
    from an agent that never saw the state (another host) or after "running" is not."""
    assert _waits(["not_running", "unknown", "unknown", "starting", "running"]) == [
        5.0, 5.0, 5.0, 5.0, 60.0,
    ]  # fmt: skip
    assert _waits(["unknown", "unknown"]) == [60.0, 60.0]
    assert _waits(["running", "unknown", "not_running", "unknown", "running"]) == [
        60.0, 60.0, 5.0, 5.0, 60.0,
    ]  # fmt: skip


class ListeningSampler:
    """A running broker's samples; its listener answers as ``listening`` says."""

    def __init__(self) -> None:
        self.listening: bool | None = True

    def sample(self) -> bs.BrokerStats:
        running = bs.Process(
            state="running",
            broker_state=3,
            logs_to_recover=None,
            segments_to_recover=None,
            listening=True,
            down_since_ms=None,
            restarts=0,
            restart_window_s=600.0,
        )
        return _record(1).model_copy(update={"process": running})

    def listening_now(self) -> bool | None:
        return self.listening

    def probe(self) -> None:
        pass


def test_between_samples_a_heartbeat_says_the_agent_lives_and_a_closed_listener_samples() -> None:
    config = CONFIG.model_copy(update={"interval_s": 60.0, "heartbeat_interval_s": 5.0})
    sampler, publisher = ListeningSampler(), MemoryPublisher()
    agent = Agent(config, sampler=sampler, publisher=publisher)  # type: ignore[arg-type]
    agent.run_once()
    assert agent.heartbeat_if_due() and len(publisher.published) == 1  # not due yet
    agent._spoke_at = time.monotonic() - 5.0  # five seconds on
    assert agent.heartbeat_if_due()
    beat = publisher.published[-1]
    assert isinstance(beat, bs.Heartbeat)
    assert (beat.broker_id, beat.next_within_s, beat.listening) == (7, 5.0, True)
    assert bs.to_json(beat).startswith(bs.HEARTBEAT_PREFIX)
    # The listener of a broker last seen running closed: no heartbeat, a sample at once.
    agent._spoke_at = time.monotonic() - 5.0
    sampler.listening = False
    assert not agent.heartbeat_if_due() and len(publisher.published) == 2
    # Switched off: the samples alone.
    quiet = Agent(
        config.model_copy(update={"heartbeat_interval_s": None}),
        sampler=sampler,  # type: ignore[arg-type]
        publisher=publisher,  # type: ignore[arg-type]
    )
    quiet._spoke_at = time.monotonic() - 60.0
    assert quiet.heartbeat_if_due() and len(publisher.published) == 2
