"""The adaptive replication throttle's arithmetic (pure): how fast kmedic may copy through each
broker, from that broker's own traffic and its network capacity.

The rule is kafka-kit's autothrottle, per broker and per direction (a leader sends the copies:
``leader.replication.throttled.rate`` caps its outbound copy traffic; a new replica receives
them: ``follower.replication.throttled.rate`` caps its inbound), with a target share of the
link (``utilisation``, 0.92 by default; kafka-kit's is the whole link, 1):

    rate = (utilisation * capacity - others - max(used - capacity, 0)) * ratio

Below 1 it keeps the link's traffic under that share while kmedic copies: a link nearly full
queues every byte in front of the in-sync replication that acks=all writes wait for, so the
clients' latency grows well before the link is full (docs/bench.md, "Second by second").
kafka-kit measures a broker's whole traffic and subtracts the rate it set before to find
``others``. kmedic's figure needs no subtraction: the agents read Kafka's ``BytesInPerSec`` and
``BytesOutPerSec`` meters, which count clients only (a reassignment's copies are replication
traffic, metered apart), and add the steady replication each broker carries as a leader or a
follower (``broker_traffic``), so ``others`` is everything but kmedic's copies. The second term
gives back what a broker is over its capacity. The result is kept between a floor (a heal
always moves) and the capacity; the floor is at most ``floor_share`` of the broker's link (on a
link slower than the floor, a floor of the whole link would be no throttle at all), and a new rate
replaces the one set only when it differs by more than ``threshold`` of it (no config churn on
noise). Partitions whose writes already fail (under ``min.insync.replicas``) are copied at no
less than ``urgent_floor_bytes_per_s``: availability before politeness. And a copy must outpace
the writes to what it copies: a new replica catches up only at the rate its leader sends minus
the rate the partition grows, so a throttle under the moving partitions' write rate never ends
the move (it grows all the while, so no watchdog sees it stall). Each broker's rate is at least
``outpace`` times the write rate of the partitions it copies in that direction (still at most
its capacity).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from kmedic.replica_columns import TOPIC_IDS, AgentRecord, join, keys_of, last_wins
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE, BrokerKey

Direction = Literal["in", "out"]
STALE_INTERVALS = 3
# Kafka holds a replication throttle only on average over its quota window
# (replication.quota.window.num x .size.seconds; 11 s by default): over a window longer than
# one second a throttled copy runs at link speed until the average reaches its rate (for
# seconds at a time over 11); over one it is paced fetch by fetch within the second
# (docs/executor.md, "Kafka's quota window"). Past this many seconds a rate change says so.
BURSTY_WINDOW_S = 1.0
# A move's end bumps its partition's leader epoch; a follower that fetches at the new epoch
# before its leader knows it is refused and waits replica.fetch.backoff.ms (1 s by default),
# and the partition's acks=all writes wait with it: past this many milliseconds a rate change
# says so (docs/executor.md, "A move's end").
SLOW_FETCH_BACKOFF_MS = 200
DIRECTION_OF_KEY: dict[str, Direction] = {LEADER_RATE: "out", FOLLOWER_RATE: "in"}


class Headroom(BaseModel):
    """The ``executor.adaptive:`` settings (docs/executor.md, "The adaptive throttle")."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    ratio: float = Field(default=0.9, gt=0, le=1, description="share of the headroom kmedic uses")
    utilisation: float = Field(
        default=0.92,
        gt=0,
        le=1,
        description="share of the link the broker's traffic may fill with kmedic's copies: "
        "the headroom is what its other traffic leaves of that share",
    )
    floor_bytes_per_s: int = Field(
        default=10_000_000, ge=1024, description="never slower than this: a heal always moves"
    )
    floor_share: float = Field(
        default=0.1,
        gt=0,
        le=1,
        description="the floor is at most this share of the broker's link (a slow link's "
        "floor leaves the clients the rest)",
    )
    urgent_floor_bytes_per_s: int = Field(
        default=50_000_000,
        ge=1024,
        description="never slower than this for a broker copying a partition under "
        "min.insync.replicas (its acks=all writes already fail)",
    )
    outpace: float = Field(
        default=2.0,
        ge=1,
        description="never slower than this many times the write rate of the partitions a "
        "broker copies (under it a move never ends)",
    )
    threshold: float = Field(
        default=0.1, ge=0, lt=1, description="a new rate replaces the one set past this fraction"
    )
    moves_within_headroom: bool = Field(
        default=False,
        description="start a move only while the writes of the partitions each broker copies, "
        "times outpace, fit its headroom rate (at least one move per broker and direction): "
        "more would push its rate over the target share to outpace them",
    )
    moves_into_broker: int = Field(
        default=2,
        ge=1,
        description="at most this many moves copy into one broker at once (besides "
        "executor.max_moves_per_broker; a partition under min.insync.replicas is not held): "
        "the headroom its link has for copies is shared by fewer senders, whose answers "
        "arrive in smaller bursts in front of the replication acks=all writes wait for",
    )
    interval_s: float = Field(default=5.0, gt=0, description="how often the rates are recomputed")


@dataclass(frozen=True)
class Traffic:
    """One broker's network traffic other than kmedic's copies (bytes/s)."""

    in_bytes_per_s: float
    out_bytes_per_s: float

    def of(self, direction: Direction) -> float:
        return self.in_bytes_per_s if direction == "in" else self.out_bytes_per_s


@dataclass(frozen=True)
class Link:
    """One broker's network capacity, each direction (bytes/s), and where the figure came
    from, in words (its agent's link speed, the config, the default)."""

    in_bytes_per_s: float
    out_bytes_per_s: float
    source: str

    def of(self, direction: Direction) -> float:
        return self.in_bytes_per_s if direction == "in" else self.out_bytes_per_s


@dataclass(frozen=True)
class RateFigures:
    """Why one broker's rate is what it is: what the audit record of a change shows."""

    broker: int
    config: str
    rate: int
    capacity: float
    used: float | None  # None: no figure for the broker
    urgent: bool
    before: int | None  # the rate set until now (None: none)
    capacity_source: str = ""  # where the capacity came from (Link.source)
    writes: float = 0.0  # bytes/s written to the partitions the broker copies that way
    window_s: float | None = None  # seconds Kafka averages the rate over (None: not known)
    fetch_backoff_ms: int | None = None  # the broker's replica.fetch.backoff.ms (None: not known)


def headroom_rate(
    capacity: float, used: float | None, rule: Headroom, *, urgent: bool, writes: float = 0.0
) -> int:
    """The rate for one broker and direction, given everyone else's traffic there and the
    write rate of the partitions it copies that way; the floor when that traffic is unknown
    (an agent that stopped reporting: polite until it is measured again)."""
    floor = (
        float(rule.urgent_floor_bytes_per_s)
        if urgent
        else min(float(rule.floor_bytes_per_s), rule.floor_share * capacity)
    )
    floor = max(floor, rule.outpace * writes)
    rate = float(floor) if used is None else max(headroom(capacity, used, rule), float(floor))
    return int(min(rate, capacity))


def headroom(capacity: float, used: float, rule: Headroom) -> float:
    """The rule before its floors: (utilisation x capacity - others - excess) x ratio."""
    return (rule.utilisation * capacity - used - max(used - capacity, 0.0)) * rule.ratio


def write_budgets(
    brokers: Iterable[int],
    traffic: Mapping[int, Traffic],
    capacity: Mapping[int, Link],
    rule: Headroom,
) -> dict[BrokerKey, float]:
    """The write rate (bytes/s) of the partitions each broker may copy at once, by rate key:
    its ``headroom`` (the rate without its floors) over ``outpace``. A rate must
    outpace what it copies is written, so copies written more than this would lift it over the
    target share. A broker with no traffic figure has no budget (absent: unbounded)."""
    out: dict[BrokerKey, float] = {}
    for broker in sorted(set(brokers)):
        used = traffic.get(broker)
        if used is None:
            continue
        for key, direction in DIRECTION_OF_KEY.items():
            room = headroom(capacity[broker].of(direction), used.of(direction), rule)
            out[(broker, key)] = max(room, 0.0) / rule.outpace
    return out


def worth_changing(current: int | None, proposed: int, threshold: float) -> bool:
    """Whether a new rate replaces the one set: always when none is set, else only past the
    threshold (a fraction of the rate set)."""
    return current is None or abs(proposed - current) > threshold * current


def plan_rates(
    brokers: Iterable[int],
    urgent: frozenset[int],
    traffic: Mapping[int, Traffic],
    capacity: Mapping[int, Link],
    current: Mapping[BrokerKey, int],
    rule: Headroom,
    writes: Mapping[BrokerKey, float] | None = None,
) -> tuple[dict[BrokerKey, int], list[RateFigures]]:
    """The rate of each broker taking part in moves, both directions: the one set when the new
    one is within the threshold, else the new one. ``writes``: bytes/s written to the
    partitions each broker copies, by rate key (absent: none known). Returns the rates and the
    figures of each rate that changed (a broker taking part anew counts as changed)."""
    writes = writes or {}
    rates: dict[BrokerKey, int] = {}
    changed: list[RateFigures] = []
    for broker in sorted(set(brokers)):
        used = traffic.get(broker)
        for key, direction in sorted(DIRECTION_OF_KEY.items()):
            link = capacity[broker]
            cap = link.of(direction)
            figure = None if used is None else used.of(direction)
            written = writes.get((broker, key), 0.0)
            proposed = headroom_rate(cap, figure, rule, urgent=broker in urgent, writes=written)
            before = current.get((broker, key))
            if worth_changing(before, proposed, rule.threshold):
                rates[(broker, key)] = proposed
                changed.append(
                    RateFigures(
                        broker,
                        key,
                        proposed,
                        cap,
                        figure,
                        broker in urgent,
                        before,
                        link.source,
                        written,
                    )
                )
            else:
                assert before is not None
                rates[(broker, key)] = before
    return rates, changed


def copy_writes(
    copies: Iterable[tuple[Iterable[int], Iterable[int], float]],
) -> dict[BrokerKey, float]:
    """The write rate of the partitions each broker copies, by rate key, from each copy's
    replicas before the move (any may lead: each sends), the replicas it adds (each
    receives) and its partition's write rate (bytes/s)."""
    out: dict[BrokerKey, float] = {}
    for senders, receivers, rate in copies:
        for broker in senders:
            out[(broker, LEADER_RATE)] = out.get((broker, LEADER_RATE), 0.0) + rate
        for broker in receivers:
            out[(broker, FOLLOWER_RATE)] = out.get((broker, FOLLOWER_RATE), 0.0) + rate
    return out


def broker_traffic(records: Mapping[int, AgentRecord], now_ms: int) -> dict[int, Traffic]:
    """Each reporting broker's traffic other than kmedic's copies, from its agent's newest
    record: its clients' bytes in and out (Kafka's meters count clients only), plus the steady
    replication it carries - as a follower it receives what its leaders receive, as a leader
    it sends that to each follower. A replica the broker is being added as (its record's
    reassignments) is a copy: its fetches, the partition's new writes among them, go through
    the throttle, so they are not others' traffic (counted twice they would take their own
    room). A broker whose newest record failed, or is older than three of its agent's
    intervals (the agent stopped), has no figure. Joined over the records' replica columns;
    sums added in record order, as a loop would."""
    fresh = {
        b: r
        for b, r in records.items()
        if r.stats.failure is None
        and now_ms - r.stats.timestamp_ms <= STALE_INTERVALS * r.stats.interval_s * 1000
    }
    if not fresh:
        return {}
    columns = [r.replicas for r in fresh.values()]
    produced, rate = last_wins(
        np.concatenate([c.leader_key for c in columns]),
        np.concatenate([c.leader_bytes_in for c in columns]),
    )
    follower_key = np.concatenate([c.follower_key for c in columns])
    rates = join(produced, rate, follower_key, 0.0)[1]
    rates[np.concatenate([_being_added(b, r) for b, r in fresh.items()])] = 0.0
    brokers = list(fresh)
    owner = np.repeat(np.arange(len(brokers)), [len(c.follower_key) for c in columns])
    replication_in = np.bincount(owner, weights=rates, minlength=len(brokers)).tolist()
    sources = np.concatenate([c.follower_leader for c in columns])
    led = sources >= 0
    out_ids, out_at = np.unique(sources[led], return_inverse=True)
    out_sums = np.bincount(out_at, weights=rates[led], minlength=len(out_ids)).tolist()
    replication_out = dict(zip(out_ids.tolist(), out_sums, strict=True))
    return {
        broker: Traffic(
            record.stats.totals.bytes_in_per_s + replication_in[i],
            record.stats.totals.bytes_out_per_s + replication_out.get(broker, 0.0),
        )
        for i, (broker, record) in enumerate(fresh.items())
    }


def _being_added(broker: int, record: AgentRecord) -> npt.NDArray[np.bool_]:
    """Which of the record's followers are replicas the broker is being added as."""
    adding = [
        (r.topic, r.partition) for r in record.stats.reassigning if broker in r.adding_replicas
    ]
    if not adding:
        return np.zeros(len(record.replicas.follower_key), dtype=np.bool_)
    topics = TOPIC_IDS.of([t for t, _ in adding])
    keys = keys_of(topics, np.array([p for _, p in adding], dtype=np.int64))
    return np.isin(record.replicas.follower_key, keys)


def rate_sentence(figures: RateFigures) -> str:
    """One rate change in words: 'broker 2 out 67.5 MB/s (was 50.0 MB/s; others use 50.0 of
    125.0 MB/s, the capacity config)'."""
    direction = DIRECTION_OF_KEY.get(figures.config, figures.config)
    was = "none" if figures.before is None else _mb(figures.before)
    if figures.used is None:
        why = "no traffic figure: the floor"
    else:
        why = f"others use {figures.used / 1e6:.1f} of {_mb(figures.capacity)}"
        if figures.capacity_source:
            why += f", {figures.capacity_source}"
    urgent = ", under min.insync.replicas" if figures.urgent else ""
    if figures.writes:
        why += f"; its moves' partitions are written at {_mb(figures.writes)}"
    if figures.window_s is not None and figures.window_s > BURSTY_WINDOW_S:
        why += (
            f"; Kafka holds it only over {figures.window_s:.0f} s "
            "(replication.quota.window.num): the copy bursts at link speed"
        )
    backoff = figures.fetch_backoff_ms
    if direction == "in" and backoff is not None and backoff > SLOW_FETCH_BACKOFF_MS:
        why += (
            f"; its followers wait {backoff} ms after a refused fetch "
            "(replica.fetch.backoff.ms): a written partition's acks=all writes may wait as "
            "long at each move's end"
        )
    return f"broker {figures.broker} {direction} {_mb(figures.rate)} (was {was}; {why}{urgent})"


def _mb(rate: float) -> str:
    return f"{rate / 1e6:.1f} MB/s"
