"""The replication throttle rate each broker taking part in moves should have: none, one fixed
rate, or adaptive - each broker's headroom, from its traffic and capacity
(manager.throttling.adaptive has the rule).

The adaptive rates come from a ``TrafficFeed`` the daemon provides (the agents' newest records,
each broker's link speed as its agent reports it, or as configured). The traffic is read at most
every ``interval_s``; between two reads the rates stay as they are. A broker with no figure (no
feed, an agent that stopped) gets the floor. A partition is urgent when its in-sync replicas are
fewer than its topic's ``min.insync.replicas`` (read once per topic while its moves run): the
brokers copying it get at least the urgent floor. Each changed rate carries the seconds its
broker's Kafka averages it over (its replication quota window) and how long its followers wait
after a refused fetch (``replica.fetch.backoff.ms``), read once per live broker, and the write
budget the moves start within is computed here from the same readings.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Literal, Protocol

from kmedic.errors import KmedicError
from kmedic.kafka_admin import (
    ReplicationTiming,
    describe_min_insync,
    describe_replication_timings,
)
from kmedic.logging import get_logger
from manager.model.moves import Move, TopicPartition
from manager.throttling.adaptive import (
    Headroom,
    Link,
    RateFigures,
    Traffic,
    copy_writes,
    plan_rates,
    write_budgets,
)
from manager.throttling.configs import AdminCall
from manager.throttling.ownership import RATE_KEYS, BrokerKey
from manager.throttling.targets import WriteBudget

log = get_logger(__name__)

_UNKNOWN = 1e15  # bytes/s: a link no rate reaches


class TrafficFeed(Protocol):
    def traffic(self) -> Mapping[int, Traffic]:
        """Each broker's traffic other than kmedic's copies (absent: no figure)."""
        ...

    def capacity(self, broker: int) -> Link:
        """The broker's network capacity, each direction (bytes/s), and where it came from."""
        ...

    def writes(self, partitions: Iterable[TopicPartition]) -> Mapping[TopicPartition, float]:
        """The bytes/s written to each partition, as its leader's agent last reported it
        (absent: not known)."""
        ...


class ThrottleSettings(Protocol):
    """What the rates read of the executor's config (manager.executor.config)."""

    @property
    def throttle_bytes_per_s(self) -> int | Literal["adaptive"] | None: ...

    @property
    def adaptive(self) -> Headroom: ...


class ThrottleRates:
    def __init__(
        self,
        config: ThrottleSettings,
        admin_call: AdminCall,
        broker_call: AdminCall | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``broker_call``: for one broker's own configs, tried once (default: ``admin_call``)."""
        self.setting = config.throttle_bytes_per_s
        self.rule = config.adaptive
        self.feed: TrafficFeed | None = None
        self._call = admin_call
        self._broker_call = broker_call or admin_call
        self._clock = clock
        self._traffic: Mapping[int, Traffic] = {}
        self._read_at: float | None = None
        self._min_insync: dict[str, int] = {}
        self._timings: dict[int, ReplicationTiming] = {}  # read once per broker

    @property
    def adaptive(self) -> bool:
        return self.setting == "adaptive"

    def due(self) -> bool:
        """Whether the traffic is due to be read again (adaptive only)."""
        return self.adaptive and (
            self._read_at is None or self._clock() - self._read_at >= self.rule.interval_s
        )

    def wanted(
        self,
        brokers: frozenset[int],
        urgent: frozenset[int],
        current: Mapping[BrokerKey, str],
        copies: Sequence[tuple[Move, Sequence[int]]] = (),
        live: frozenset[int] | None = None,
    ) -> tuple[dict[BrokerKey, str], list[RateFigures]]:
        """The rate of each broker in ``brokers``, both directions, and the figures behind each
        adaptive rate that differs from ``current`` (the rates set now); ``copies``: the moves
        (each with the replicas it started from), whose partitions' writes each rate must
        outpace; ``live``: the brokers that answer (None: all), the only ones asked for their
        replication timing."""
        if self.setting is None:
            return {}, []
        if self.setting != "adaptive":
            return {(b, k): str(self.setting) for b in brokers for k in RATE_KEYS}, []
        self._refresh()
        feed = self.feed
        # No feed: no capacity known either (none that would bound a floor), and every rate
        # is the floor.
        capacity = {
            b: feed.capacity(b) if feed else Link(_UNKNOWN, _UNKNOWN, "no traffic feed")
            for b in brokers
        }
        writes = self._copy_writes(copies)
        rates, changed = plan_rates(
            brokers, urgent, self._traffic, capacity, _ints(current), self.rule, writes
        )
        asked = {f.broker for f in changed}
        self._read_timings(asked if live is None else asked & live)
        unknown = ReplicationTiming(None, None)
        changed = [
            replace(
                f,
                window_s=self._timings.get(f.broker, unknown).quota_window_s,
                fetch_backoff_ms=self._timings.get(f.broker, unknown).fetch_backoff_ms,
            )
            for f in changed
        ]
        return {k: str(v) for k, v in rates.items()}, changed

    def partition_writes(
        self, partitions: Iterable[TopicPartition]
    ) -> Mapping[TopicPartition, float]:
        """The bytes/s written to each partition, as its leader's agent last reported it (the
        traffic read first when due; absent: not known, and nothing without a feed)."""
        if self.feed is None:
            return {}
        self._refresh()
        try:
            return self.feed.writes(partitions)
        except Exception as exc:  # unknown writes: the plan's order
            log.warning("partition_writes_unreadable", error=str(exc) or type(exc).__name__)
            return {}

    def write_budget(
        self,
        moves: Sequence[Move],
        replicas: Mapping[TopicPartition, Sequence[int]],
        isr: Mapping[TopicPartition, Sequence[int]],
    ) -> WriteBudget | None:
        """What each broker taking part in ``moves`` (pending and in flight, by their
        partitions' ``replicas`` before they move) may copy at once, by the traffic and writes
        the rates read (``adaptive.write_budgets``); None when not asked for
        (``moves_within_headroom``) or nothing is known to bound it."""
        if not (self.adaptive and self.rule.moves_within_headroom) or self.feed is None:
            return None
        writes = self.partition_writes([m.tp for m in moves])
        brokers = {b for m in moves for b in (*replicas.get(m.tp, ()), *m.target)}
        capacity = {b: self.feed.capacity(b) for b in brokers}
        limits = write_budgets(brokers, self._traffic, capacity, self.rule)
        return WriteBudget(writes, limits, self.under_min_insync(moves, isr))

    def _refresh(self) -> None:
        if self.due():
            self._traffic = self._read_traffic()
            self._read_at = self._clock()

    def _copy_writes(self, copies: Sequence[tuple[Move, Sequence[int]]]) -> dict[BrokerKey, float]:
        if self.feed is None or not copies:
            return {}
        try:
            known = self.feed.writes([m.tp for m, _ in copies])
        except Exception as exc:  # unknown writes: the floor alone, and the heal goes on
            log.warning("throttle_writes_unreadable", error=str(exc) or type(exc).__name__)
            return {}
        return copy_writes(
            (original, [b for b in m.target if b not in original], known.get(m.tp, 0.0))
            for m, original in copies
        )

    def urgent(
        self,
        moves: Sequence[tuple[Move, Sequence[int]]],
        isr: Mapping[TopicPartition, Sequence[int]],
    ) -> frozenset[int]:
        """The brokers copying a partition whose writes fail: fewer in-sync replicas than its
        topic's ``min.insync.replicas`` (each move with the replicas it started from)."""
        brokers: set[int] = set()
        short = self.under_min_insync([m for m, _ in moves], isr)
        for move, original in moves:
            if move.tp in short:
                brokers.update(original)
                brokers.update(move.target)
        return frozenset(brokers)

    def under_min_insync(
        self, moves: Sequence[Move], isr: Mapping[TopicPartition, Sequence[int]]
    ) -> frozenset[TopicPartition]:
        """The partitions of ``moves`` with fewer in-sync replicas than their topic's
        ``min.insync.replicas`` (adaptive only: the fixed rates need no such reading)."""
        if not self.adaptive or not moves:
            return frozenset()
        self._read_min_insync({m.topic for m in moves})
        return frozenset(
            m.tp
            for m in moves
            if (in_sync := isr.get(m.tp)) is not None
            and len(in_sync) < self._min_insync.get(m.topic, 1)
        )

    def forget_topics(self, keep: Iterable[str]) -> None:
        """Drop what is known of topics no move runs on any more (their configs may change)."""
        kept = set(keep)
        self._min_insync = {t: v for t, v in self._min_insync.items() if t in kept}

    def _read_traffic(self) -> Mapping[int, Traffic]:
        if self.feed is None:
            return {}
        try:
            return self.feed.traffic()
        except Exception as exc:  # no figure is the floor: polite, and the heal goes on
            log.warning("throttle_traffic_unreadable", error=str(exc) or type(exc).__name__)
            return {}

    def _read_timings(self, brokers: set[int]) -> None:
        """Each broker's quota window and fetch backoff, read once (static configs: a restart
        changes them, and the successor reads them anew), one broker at a time: Kafka answers
        a broker's configs from that broker, and one that does not answer fails the whole
        request. Unreadable: not known, read again at its next change."""
        for broker in sorted(brokers - set(self._timings)):
            read: Callable[[Any], dict[int, ReplicationTiming]] = functools.partial(
                describe_replication_timings, brokers=[broker]
            )
            try:
                found = self._broker_call(read, f"read broker {broker}'s replication timing")
            except KmedicError as exc:
                log.warning("replication_timing_unreadable", broker=broker, error=str(exc))
                continue
            self._timings.update(found)

    def _read_min_insync(self, topics: set[str]) -> None:
        unknown = sorted(topics - set(self._min_insync))
        if not unknown:
            return
        try:
            found = self._call(
                lambda kp: describe_min_insync(kp, unknown), "read min.insync.replicas"
            )
        except KmedicError as exc:  # unknown: not urgent this time, read again next time
            log.warning("min_insync_unreadable", topics=unknown, error=str(exc))
            return
        self._min_insync.update(found)


def _ints(rates: Mapping[BrokerKey, str]) -> dict[BrokerKey, int]:
    return {k: int(v) for k, v in rates.items() if v.isdigit()}
