"""An in-memory Admin API for the executor's unit tests: one topic's partitions, their
leaders, a metadata lag, elections, and reassignment requests that go unanswered. The real
cluster runs the same paths in tests/integration/test_executor.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka import TopicPartition as KpTopicPartition

from kmedic.errors import KmedicError
from kmedic.metadata import PartitionInfo
from kmedic.partition_table import PartitionTable
from manager.executor.admin_calls import AdminCalls

TOPIC = "t"


class FakeKafka:
    """Partitions of one topic: replicas, leader, and a metadata lag of ``lag_reads`` reads
    after a reassignment (the controller finished; brokers still show the old order)."""

    def __init__(self, replicas: dict[int, tuple[int, ...]], leaders: dict[int, int]) -> None:
        self.replicas = dict(replicas)
        self.leaders = dict(leaders)
        self.shown = dict(replicas)  # what a Metadata read returns
        self.lag_reads = 0
        self.elections: list[tuple[int, int]] = []  # (partition, leader after)
        self.out_of_sync: set[int] = set()  # brokers out of every ISR
        self.election_error: Exception | None = None  # what ElectLeaders raises
        self.election_ignored = False  # Kafka answers without an error and elects no one
        # Reassignments Kafka lists as running (partition -> target); empty: they finish at once.
        self.ongoing: dict[int, tuple[int, ...]] = {}
        self.keep_running = False  # reassignments stay listed (and unapplied) until finish()
        # The next reassignment requests go unanswered: True once applied (the answer lost),
        # False once dropped (never reached the controller).
        self.unanswered: list[bool] = []
        self.requests: list[dict[int, tuple[int, ...] | None]] = []
        self.live = {1, 2, 3, 4}  # registered, unfenced brokers

    def partitions(self, topics: list[str]) -> PartitionTable:
        """What a Metadata request naming ``topics`` answers."""
        assert topics == [TOPIC], f"the executor reads its moves' topics only, not {topics}"
        if self.lag_reads > 0:
            self.lag_reads -= 1
        else:
            self.shown = dict(self.replicas)
        return PartitionTable.of(
            [
                PartitionInfo(
                    TOPIC,
                    p,
                    self.leaders[p],
                    self.shown[p],
                    tuple(b for b in self.shown[p] if b not in self.out_of_sync),
                )
                for p in sorted(self.replicas)
            ]
        )

    def describe_cluster(self) -> dict[str, Any]:
        return {"brokers": [{"broker_id": b} for b in sorted(self.live)]}

    def list_partition_reassignments(self) -> dict[KpTopicPartition, dict[str, list[int]]]:
        listed = {}
        for p, target in self.ongoing.items():
            adding = [b for b in target if b not in self.replicas[p]]
            removing = [b for b in self.replicas[p] if b not in target]
            listed[KpTopicPartition(TOPIC, p)] = {
                "replicas": [*target, *removing],
                "adding_replicas": adding,
                "removing_replicas": removing,
            }
        return listed

    def finish(self) -> None:
        """The running reassignments complete."""
        for p, target in self.ongoing.items():
            self.replicas[p] = target
        self.ongoing.clear()

    def alter_partition_reassignments(
        self, request: dict[KpTopicPartition, list[int] | None], timeout_ms: int
    ) -> dict[KpTopicPartition, None]:
        self.requests.append({tp.partition: tuple(t) if t else None for tp, t in request.items()})
        lost = bool(self.unanswered)  # the answer never comes back
        applied = self.unanswered.pop(0) if lost else True
        if applied:
            for tp, target in request.items():
                if target is None:
                    self.ongoing.pop(tp.partition, None)
                elif self.keep_running:
                    self.ongoing[tp.partition] = tuple(target)
                else:
                    self.replicas[tp.partition] = tuple(target)
        if lost:  # as AdminCalls says once its retries are spent
            raise KmedicError("cannot reassign 1 partitions: RequestTimedOutError")
        return dict.fromkeys(request)

    def elect_leaders(self, election_type: int, partitions: dict[str, list[int]], **_: Any) -> None:
        assert election_type == 0
        if self.election_error is not None:
            raise self.election_error
        if self.election_ignored:
            return
        for p in partitions[TOPIC]:
            # Kafka elects the first replica of the controller's list, not of a stale read.
            self.leaders[p] = self.replicas[p][0]
            self.elections.append((p, self.leaders[p]))


class FakeCalls:
    def __init__(self, kafka: FakeKafka) -> None:
        self.client = kafka
        self._timeout_ms = 1000

    elect_preferred = AdminCalls.elect_preferred
    reassign = AdminCalls.reassign
    once = AdminCalls.once

    def __call__(self, call: Callable[[FakeKafka], Any], what: str) -> Any:
        return call(self.client)

    def close(self) -> None:
        pass
