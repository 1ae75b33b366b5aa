"""bench_clients' load scenario: how full can the healed broker's link run before the clients'
produce latency grows, with no copy at all. The bound any replication throttle meets.

A heal's time and its harm are both set by the destination's link (broker 3, the dead broker's
only rack-mate, takes every lost replica): a throttle that keeps the heal within 1.3x the
unthrottled time must keep that link about as full as the unthrottled copy does, and whatever
the clients' latency is at that fill is the least a heal costs them. This scenario fills the
link with the smoothest copy there is and reads the latency at each fill.

The filler is replication: a topic whose partitions each have a leader on another rack's
broker and a follower on broker 3 (``LOAD_TOPIC``, RF 2), written with ``acks=1`` at a fixed
schedule in 1 kB records. Broker 3 fetches those writes as it would fetch a copy from the same
leaders, through the same fetch sessions and link, at exactly the rate they are written: no
quota window, no burst. The steps raise broker 3's incoming link from the clients' own load
(the first step: no filler) to each ``--levels`` share of the link (measured from the tc
classes, not assumed); each holds ``HOLD_S`` after ``SETTLE_S``. No broker is killed; kmedic
does not run.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bench_heal import Race, wait
from confluent_kafka import Producer
from kafka.admin import NewTopic
from timeline import MB, Sample, Timeline, busy_ticks, pct

LOAD_TOPIC = "bench.link-load"
DESTINATION = 3  # the dead broker's rack-mate in the heal: the link a heal fills
LEADERS = (1, 2, 4, 5)  # the copies' sources in the heal (the live brokers of other racks)
PARTITIONS_PER_LEADER = 2
RECORD = 4096  # a copy's chunk (the preload's batches): as few records a byte as a copy
SETTLE_S = 10.0
HOLD_S = 30.0


@dataclass(frozen=True)
class Step:
    level: float  # the share of the link asked for (0: no filler)
    filler: float  # bytes/s written to the load topic
    link_in: float  # broker 3's incoming link, bytes/s, measured over the hold
    sources_out: float  # the busiest source's outgoing link, bytes/s
    p50: float  # s
    p99: float
    p999: float
    records: int
    failed: int
    cpu: float  # the machine's cores busy over the hold, as a share of all of them


class Recorded(Protocol):
    """bench_clients' ``Latencies``: the steady acks=all producer's records."""

    def answered(self, until: float) -> bool: ...

    def window(self, start: float, end: float) -> tuple[list[float], int]: ...


class Filler:
    """An ``acks=1`` producer writing ``rate`` bytes/s (settable) of 1 kB records on a fixed
    schedule, round-robin over the load topic's partitions, in a thread of its own."""

    def __init__(self, bootstrap: str, partitions: int) -> None:
        self.rate = 0.0
        self._partitions = partitions
        self._stop = threading.Event()
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5, "log_level": 0}
        )
        self._thread = threading.Thread(target=self._run, name="filler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        value = b"f" * RECORD
        sent, owed, last = 0, 0.0, time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            owed += (now - last) * self.rate / RECORD
            last = now
            while owed >= 1:
                try:
                    self._producer.produce(LOAD_TOPIC, value, partition=sent % self._partitions)
                except BufferError:
                    break  # behind: the schedule slips rather than queueing without bound
                sent += 1
                owed -= 1
            owed = min(owed, 1.0)
            self._producer.poll(0.005)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._producer.flush(30)


def load_topic(race: Race) -> int:
    """The filler's topic: each partition led by one of ``LEADERS``, followed by broker 3."""
    assignment = [[leader, DESTINATION] for leader in LEADERS for _ in range(PARTITIONS_PER_LEADER)]
    # kafka-python: confluent-kafka rejects an explicit replica assignment locally
    placed = NewTopic(LOAD_TOPIC, replica_assignments=dict(enumerate(assignment)))
    race.kadmin.create_topics([placed])
    wait(lambda: LOAD_TOPIC in race.admin.list_topics(timeout=10).topics, 60, "the load topic")
    return len(assignment)


def link_rates(samples: Sequence[Sample], start: float, end: float) -> tuple[float, float]:
    """Broker 3's incoming bytes/s and the busiest source's outgoing, over [start, end]."""
    inside = [s for s in samples if start <= s.at <= end]
    if len(inside) < 2:
        raise SystemExit("bench_clients: no link readings in the hold (the timeline's tc reads)")
    a, b = inside[0], inside[-1]
    span = b.at - a.at
    link_in = (b.link[DESTINATION][1] - a.link[DESTINATION][1]) / span
    out = max((b.link[k][0] - a.link[k][0]) / span for k in LEADERS)
    return link_in, out


def filler_rate(level: float, link: float, idle_in: float) -> float:
    """What the filler writes for broker 3's link to carry ``level`` of ``link``, given what
    it carries without it (``idle_in``: the clients' replication and produce); 0 at level 0."""
    return max(0.0, level * link - idle_in) if level else 0.0


def ladder(
    race: Race,
    latencies: Recorded,
    timeline: Timeline,
    levels: list[float],
    link: float,
    settle_s: float = SETTLE_S,
    hold_s: float = HOLD_S,
) -> list[Step]:
    """Broker 3's link at each level in turn (0 first: the clients alone), the clients'
    latency at each."""
    partitions = load_topic(race)
    filler = Filler(race.bootstrap, partitions)
    steps: list[Step] = []
    idle_in = 0.0
    try:
        for level in [0.0, *levels]:
            filler.rate = filler_rate(level, link, idle_in)
            time.sleep(settle_s)
            start, ticks = time.time(), busy_ticks()
            time.sleep(hold_s)
            end, (busy, total) = time.time(), busy_ticks()
            cpu = (busy - ticks[0]) / max(1, total - ticks[1])
            wait(functools.partial(latencies.answered, end), 150, "the step's records answered")
            got, failed = latencies.window(start, end)
            link_in, sources_out = link_rates(timeline.samples, start, end)
            if not level:
                idle_in = link_in
            step = Step(
                level,
                filler.rate,
                link_in,
                sources_out,
                pct(got, 0.5),
                pct(got, 0.99),
                pct(got, 0.999),
                len(got),
                failed,
                cpu,
            )
            steps.append(step)
            print(
                f"  link load {level:.2f}: broker {DESTINATION} in {link_in / MB:.2f} MB/s "
                f"({link_in / link:.0%}), filler {filler.rate / MB:.2f} MB/s; p50/p99/p99.9 "
                f"{step.p50 * 1e3:.1f}/{step.p99 * 1e3:.1f}/{step.p999 * 1e3:.1f} ms "
                f"({len(got)} records, {failed} failed); CPU {cpu:.0%} busy",
                flush=True,
            )
    finally:
        filler.close()
    return steps
