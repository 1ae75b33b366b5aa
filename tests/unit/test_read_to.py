"""Up to which moment a feed has read each partition (manager.monitor.read_to): a partition's
leader's answer vouches for the moment it was asked once the feed has applied that far; an
unanswered question vouches for nothing."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException, TopicPartition

from manager.monitor import read_to as read_to_module
from manager.monitor.read_to import ReadTo


class Leaders:
    """A consumer whose partitions' leaders answer a high watermark, or do not answer."""

    def __init__(self, highs: dict[int, int | None]) -> None:
        self.highs = highs  # None: the leader does not answer
        self.asked: list[tuple[int, float, bool]] = []
        self.closed = False

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        self.asked.append((partition.partition, timeout, cached))
        high = self.highs[partition.partition]
        if high is None:
            raise KafkaException('KafkaError{code=_TIMED_OUT,val=-185,str="Timed out"}')
        return 0, high

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    now = [1_000_000]
    monkeypatch.setattr(read_to_module, "_now_ms", lambda: now[0])
    return now


def test_a_partition_is_read_to_the_moment_its_leader_vouched_for(clock: list[int]) -> None:
    leaders = Leaders({0: 40, 1: 7, 2: None})
    kept = ReadTo(leaders, "stats")
    kept.applied(0, 40)  # read to its end
    kept.applied(1, 5)  # two records behind what its leader has: vouched once it gets there
    kept.applied(2, 9)  # its leader cut off from this manager
    kept.ask_once()
    assert (kept.of(0), kept.of(1), kept.of(2), kept.of(3)) == (1_000_000, None, None, None)
    # Asked of the leader itself, each with its own timeout: never the cached watermark.
    assert sorted(leaders.asked) == [(p, read_to_module.TIMEOUT_S, False) for p in (0, 1, 2)]
    # Partition 1's feed gets there: the moment it was asked is vouched for, not a later one.
    clock[0] += 1_000
    kept.applied(1, 7)
    assert kept.of(1) == 1_000_000
    # A second later: partition 0 fell behind its leader, 1 is there, 2 still unanswered.
    leaders.highs[0] = 41
    kept.ask_once()
    assert (kept.of(0), kept.of(1), kept.of(2)) == (1_000_000, 1_001_000, None)
    # A feed far behind keeps the newest answers only, and is vouched for by them.
    for _ in range(read_to_module.PENDING + 4):
        clock[0] += 1_000
        leaders.highs[0] += 1
        kept.ask_once()
    kept.applied(0, leaders.highs[0] - 1)
    assert kept.of(0) == clock[0] - 1_000  # the newest answer it has reached
    kept.stop()  # never started: it closes the client of its own all the same
    assert leaders.closed


def test_an_offset_applied_out_of_order_never_takes_the_feed_back() -> None:
    kept = ReadTo(Leaders({0: 10}), "stats")
    kept.applied(0, 10)
    kept.applied(0, 3)
    kept.ask_once()
    assert kept.of(0) is not None
