"""What the demo shows and how it waits: the story printer, topic views, the audit follower.

Kept apart from the story itself (composition.demo) so the story reads as a list of steps.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster
from kmedic.localcluster import LocalCluster
from manager.audit.kafka_reader import read_records
from manager.audit.log import AuditRecord, render_line
from manager.monitor.feeds import LatestByKey

T = TypeVar("T")


class Story:
    """Prints numbered steps and events with the seconds since the demo began."""

    def __init__(self) -> None:
        self._t0 = time.monotonic()
        self._step = 0

    def step(self, text: str) -> None:
        self._step += 1
        print(f"\n[{self._elapsed()}] Step {self._step}: {text}", flush=True)

    def say(self, text: str) -> None:
        print(f"[{self._elapsed()}]   {text}", flush=True)

    def _elapsed(self) -> str:
        return f"{time.monotonic() - self._t0:6.1f}s"


def wait(check: Callable[[], T], timeout: float, what: str, interval: float = 0.5) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            result = check()
        except KafkaException:
            # A request that reached the broker just killed times out; ask again.
            result = None
        if result:
            return result
        time.sleep(interval)
    raise KmedicError(f"demo: timed out after {timeout:.0f}s waiting for {what}")


def describe(view: LatestByKey[Any]) -> str:
    """What a view has read, for a timeout message: a demo that gives up says what it saw."""
    status = view.status()
    keys = sorted(k.decode(errors="replace") for k in view.values())
    return (
        f"{status.topic}: {status.records} records read ({status.bad_records} undecodable), "
        f"keys {keys}, last error: {status.last_error or 'none'}"
    )


@contextmanager
def topic_view(
    cluster: LocalCluster, topic: str, decode: Callable[[bytes], T]
) -> Iterator[LatestByKey[T]]:
    view = LatestByKey(cluster.client, topic, decode, client_id="kmedic-demo").start()
    try:
        yield view
    finally:
        view.stop()


def partitions_on(admin: AdminClient, broker_id: int, topics: set[str] | None = None) -> list[str]:
    meta = admin.list_topics(timeout=10)
    return [
        f"{t}:{p.id}"
        for t, tm in meta.topics.items()
        if topics is None or t in topics
        for p in tm.partitions.values()
        if broker_id in p.replicas
    ]


def under_replicated(admin: AdminClient, topics: set[str] | None = None) -> list[str]:
    """One readable line per partition whose ISR is smaller than its replica set."""
    meta = admin.list_topics(timeout=10)
    lines = []
    for topic in sorted(meta.topics):
        if topics is not None and topic not in topics:
            continue
        for p in sorted(meta.topics[topic].partitions.values(), key=lambda p: p.id):
            if len(p.isrs) < len(p.replicas):
                lines.append(
                    f"{topic}:{p.id} replicas {list(p.replicas)} "
                    f"isr {list(p.isrs)} leader {p.leader}"
                )
    return lines


def placement(admin: AdminClient, topics: set[str]) -> list[str]:
    meta = admin.list_topics(timeout=10)
    return [
        f"{t}:{p.id} replicas {list(p.replicas)} isr {list(p.isrs)}"
        for t in sorted(topics)
        for p in sorted(meta.topics[t].partitions.values(), key=lambda p: p.id)
    ]


class AuditFollower:
    """Reads the audit topic from a point in time and returns what is new since the last call;
    a decision that repeats the previous one word for word is not shown again."""

    def __init__(self, bootstrap: Cluster, since_ms: int) -> None:
        self._bootstrap = bootstrap
        self._since = since_ms
        self._seen: set[str] = set()
        self._last_decision = ""
        self.records: list[AuditRecord] = []

    def new_lines(self) -> list[str]:
        lines: list[str] = []
        try:
            records = list(read_records(self._bootstrap, since_ms=self._since, timeout_s=10))
        except (KmedicError, KafkaException):
            return lines  # the manager has not created the topic yet, or a leader is moving
        for record in records:
            if record.id in self._seen:
                continue
            self._seen.add(record.id)
            self.records.append(record)
            if record.kind == "decision":
                if record.summary == self._last_decision:
                    continue
                self._last_decision = record.summary
            lines.append(render_line(record))
        return lines
