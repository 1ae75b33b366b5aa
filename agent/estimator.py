"""Per-partition traffic from per-topic meters and per-partition log deltas (pure, no I/O).

Kafka counts bytes per topic on each broker; the partitions of a topic that this broker leads
share that count in proportion to the bytes each appended between two scrapes (the Size delta,
exact unless retention or compaction removed data in the window, in which case the message
count delta times the topic's mean message size stands in). See docs/brokerstats.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from agent.exporter import Counters, ExporterSample, PartitionLog, TopicPartition
from kmedic.brokerstats import RateEstimate


@dataclass(frozen=True)
class Rates:
    bytes_in_per_s: float
    bytes_out_per_s: float
    messages_in_per_s: float
    estimate: RateEstimate


NO_BASELINE = Rates(0.0, 0.0, 0.0, "no_baseline")


@dataclass(frozen=True)
class Estimate:
    """Result for one pair of scrapes; ``window_s`` is None without a usable baseline."""

    window_s: float | None
    broker: Rates
    leaders: dict[TopicPartition, Rates]


def counters_reset(prev: ExporterSample, cur: ExporterSample) -> bool:
    """True when the broker's meters went backwards (it restarted between the scrapes)."""
    a, b = prev.broker, cur.broker
    return b.bytes_in < a.bytes_in or b.bytes_out < a.bytes_out or b.messages_in < a.messages_in


def _delta(cur: Counters | None, prev: Counters | None) -> Counters:
    c = cur or Counters()
    p = prev or Counters()
    return Counters(
        max(0.0, c.bytes_in - p.bytes_in),
        max(0.0, c.bytes_out - p.bytes_out),
        max(0.0, c.messages_in - p.messages_in),
    )


def _appended(prev: PartitionLog, cur: PartitionLog) -> int | None:
    """Bytes appended between two scrapes, or None when data was also removed."""
    if cur.log_start_offset != prev.log_start_offset or cur.size < prev.size:
        return None
    return cur.size - prev.size


def _split_topic(
    partitions: list[TopicPartition],
    prev: ExporterSample,
    cur: ExporterSample,
    topic_delta: Counters,
    window: float,
) -> dict[TopicPartition, Rates]:
    messages: dict[TopicPartition, int] = {}
    exact: dict[TopicPartition, int | None] = {}
    for tp in partitions:
        before, after = prev.partitions.get(tp), cur.partitions.get(tp)
        if before is None or after is None:
            continue  # no log figures on one side: new replica or a gap in the page
        messages[tp] = max(0, after.log_end_offset - before.log_end_offset)
        exact[tp] = _appended(before, after)
    if topic_delta.messages_in > 0:
        mean_size = topic_delta.bytes_in / topic_delta.messages_in
    else:
        known = [(exact[tp], messages[tp]) for tp in exact if exact[tp] is not None]
        total_msgs = sum(m for _, m in known)
        mean_size = sum(b or 0 for b, _ in known) / total_msgs if total_msgs else 0.0
    appended: dict[TopicPartition, float] = {}
    for tp, size_delta in exact.items():
        appended[tp] = float(size_delta) if size_delta is not None else messages[tp] * mean_size
    total = sum(appended.values())
    # A topic without a meter yet (no produce since its meter was created) uses the log deltas.
    bytes_in = topic_delta.bytes_in if topic_delta.messages_in or topic_delta.bytes_in else total
    result: dict[TopicPartition, Rates] = {}
    for tp in partitions:
        if tp not in appended:
            result[tp] = NO_BASELINE
            continue
        msgs = messages[tp] / window
        if total > 0:
            share = appended[tp] / total
            how: RateEstimate = "size_delta" if exact[tp] is not None else "offset_share"
        else:
            share = 1.0 / len(appended)
            moved = topic_delta.bytes_in > 0 or topic_delta.bytes_out > 0
            how = "even_split" if moved else "size_delta"
        result[tp] = Rates(
            bytes_in_per_s=bytes_in * share / window,
            bytes_out_per_s=topic_delta.bytes_out * share / window,
            messages_in_per_s=msgs,
            estimate=how,
        )
    return result


def estimate(
    prev: ExporterSample | None, cur: ExporterSample, leaders: Iterable[TopicPartition]
) -> Estimate:
    """Per-leader rates over the window between two scrapes of the same broker."""
    leader_list = list(leaders)
    if prev is None or cur.taken_at <= prev.taken_at or counters_reset(prev, cur):
        return Estimate(None, NO_BASELINE, dict.fromkeys(leader_list, NO_BASELINE))
    window = cur.taken_at - prev.taken_at
    b = _delta(cur.broker, prev.broker)
    broker = Rates(b.bytes_in / window, b.bytes_out / window, b.messages_in / window, "size_delta")
    by_topic: dict[str, list[TopicPartition]] = defaultdict(list)
    for tp in leader_list:
        by_topic[tp[0]].append(tp)
    out: dict[TopicPartition, Rates] = {}
    for topic, parts in by_topic.items():
        delta = _delta(cur.topics.get(topic), prev.topics.get(topic))
        out.update(_split_topic(parts, prev, cur, delta, window))
    return Estimate(window, broker, out)
