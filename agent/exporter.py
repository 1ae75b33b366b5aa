"""The broker's Prometheus JMX exporter: scrape the page and turn it into typed counters.

Metric names follow configs/jmx-exporter.yaml. Lines of metrics the agent does not read are
dropped before parsing, and a series seen on the previous page is not parsed again, only its
value (see ``PageParser``): each partition exports several log gauges, so this keeps a scrape
of a broker with many partitions cheap.
"""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import NamedTuple

from prometheus_client.parser import text_string_to_metric_families

from kmedic.errors import KmedicError, Unreachable

TOPIC_METRICS = "kafka_server_brokertopicmetrics_"
LOG_METRICS = "kafka_log_log_"
URP_METRIC = "kafka_server_replicamanager_underreplicatedpartitions"
PARTITION_COUNT_METRIC = "kafka_server_replicamanager_partitioncount"
PRODUCE_LOCAL_METRIC = "kafka_network_requestmetrics_localtimems_"
FLUSH_METRIC = "kafka_log_logflushstats_logflushrateandtimems_"
PARTITION_METRICS = "kafka_cluster_partition_"
FETCH_LAG_METRIC = "kafka_server_fetcherlagmetrics_consumerlag"
# KRaft's metadata log is a local log with no partition (and so no partition gauges).
METADATA_LOG = "__cluster_metadata"
_WANTED_PREFIXES = (
    TOPIC_METRICS + "bytesinpersec",
    TOPIC_METRICS + "bytesoutpersec",
    TOPIC_METRICS + "messagesinpersec",
    LOG_METRICS + "size",
    LOG_METRICS + "logendoffset",
    LOG_METRICS + "logstartoffset",
    URP_METRIC,
    PARTITION_COUNT_METRIC,
    PRODUCE_LOCAL_METRIC,
    FLUSH_METRIC,
    PARTITION_METRICS + "replicascount",
    PARTITION_METRICS + "insyncreplicascount",
    FETCH_LAG_METRIC,
)


class ExporterUnreachable(Unreachable):
    """The exporter endpoint did not answer with a page. ``there``: something took the
    connection - it answered an HTTP error, or not in time (a JVM alive but slow: a long
    pause, a starved host) - rather than refusing it (nobody listening: the process gone)."""

    def __init__(self, message: str, *, there: bool = False) -> None:
        super().__init__(message)
        self.there = there


class ExporterParseError(KmedicError):
    """The exporter answered, but not with the metrics the agent needs."""


class Counters(NamedTuple):
    """Cumulative counts since the broker started (a Kafka meter's ``Count``). A tuple: a page
    holds one per topic, thousands on a big broker."""

    bytes_in: float = 0.0
    bytes_out: float = 0.0
    messages_in: float = 0.0


class PartitionLog(NamedTuple):
    """One local partition's log gauges (a tuple: a page holds one per partition)."""

    size: int
    log_start_offset: int
    log_end_offset: int


TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Timer:
    """A Kafka timer's count and lifetime mean (its sum is their product)."""

    count: float
    mean_ms: float


def interval_mean(before: Timer | None, after: Timer | None) -> float | None:
    """The exact mean of what the timer measured between two scrapes; None without both, or
    with nothing measured in between (or a restart: the count went down)."""
    if before is None or after is None or after.count <= before.count:
        return None
    spent = after.mean_ms * after.count - before.mean_ms * before.count
    return max(0.0, spent / (after.count - before.count))


@dataclass(frozen=True)
class PartitionGauges:
    """Each local partition's role as the broker's own gauges say it (configs/jmx-exporter.yaml).

    A leader's replica and in-sync replica counts are both 0 on a follower; a follower's
    fetcher thread is named after the leader it copies from. ``following`` holds every local
    partition this broker does not lead, with that leader (-1: no fetcher, so none known)."""

    leading: dict[TopicPartition, tuple[int, int]]  # (replicas, in-sync replicas)
    following: dict[TopicPartition, int]


@dataclass(frozen=True)
class ExporterSample:
    """One scrape. ``taken_at`` is a monotonic clock reading in seconds."""

    taken_at: float
    broker: Counters
    topics: dict[str, Counters]
    partitions: dict[TopicPartition, PartitionLog]
    under_replicated: int | None
    produce_local: Timer | None = None  # the broker's own time on Produce requests
    log_flush: Timer | None = None  # its log flushes
    # None: the page has partition logs but no partition gauges (an exporter configured
    # without them), so the roles must come from the cluster's metadata.
    gauges: PartitionGauges | None = None


def fetch_page(url: str, timeout_s: float) -> str:
    """GET the exporter page; any transport or HTTP failure is ExporterUnreachable."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            body: bytes = resp.read()
    except urllib.error.HTTPError as exc:
        raise ExporterUnreachable(f"exporter {url} answered HTTP {exc.code}", there=True) from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        slow = isinstance(reason, TimeoutError)  # socket.timeout is TimeoutError
        raise ExporterUnreachable(f"exporter {url} unreachable: {reason}", there=slow) from exc
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ExporterParseError(f"exporter {url} page is not UTF-8: {exc}") from exc


_COUNTER_FIELDS = {"bytesinpersec": 0, "bytesoutpersec": 1, "messagesinpersec": 2}
_LOG_FIELDS = {"size": 0, "logstartoffset": 1, "logendoffset": 2}
_TIMER_FIELDS = {"count": 0, "mean": 1}
_ROLE_FIELDS = {"replicascount": 0, "insyncreplicascount": 1}
_BROKER, _TOPIC, _LOG, _URP, _PRODUCE, _FLUSH, _ROLE, _FETCH, _COUNT, _IGNORED = range(10)

# One parsed sample line: (kind, topic, partition, field index, value); a fetch lag's field is
# the leader's id.
_Item = tuple[int, str, int, int, float]
_Key = tuple[int, str, int, int]  # an item without its value: what a series is
_IGNORE: _Item = (_IGNORED, "", -1, -1, 0.0)


_PER_PARTITION = ((_LOG, LOG_METRICS, _LOG_FIELDS), (_ROLE, PARTITION_METRICS, _ROLE_FIELDS))
_BROKER_GAUGES = {URP_METRIC: _URP, PARTITION_COUNT_METRIC: _COUNT}


def _classify(name: str, labels: dict[str, str], value: float) -> _Item:
    if name.startswith(TOPIC_METRICS):
        field = _COUNTER_FIELDS.get(name[len(TOPIC_METRICS) :].removesuffix("_total"))
        if field is None or name.endswith("_created"):
            return _IGNORE
        topic = labels.get("topic")
        if topic is None:
            return (_BROKER, "", -1, field, value)
        return (_TOPIC, topic, -1, field, value)
    for kind, prefix, fields in _PER_PARTITION:
        if name.startswith(prefix):
            index = fields.get(name[len(prefix) :])
            if index is None:
                return _IGNORE
            return (kind, labels["topic"], int(labels["partition"]), index, value)
    if name in _BROKER_GAUGES:
        return (_BROKER_GAUGES[name], "", -1, -1, value)
    if name == FETCH_LAG_METRIC:
        return (_FETCH, labels["topic"], int(labels["partition"]), int(labels["leader"]), value)
    for kind, prefix in ((_PRODUCE, PRODUCE_LOCAL_METRIC), (_FLUSH, FLUSH_METRIC)):
        if name.startswith(prefix) and labels.get("request", "Produce") == "Produce":
            field = _TIMER_FIELDS.get(name[len(prefix) :])
            return _IGNORE if field is None else (kind, "", -1, field, value)
    return _IGNORE


# A sample line as the JMX exporter writes it: a name, labels without escapes, a value and no
# timestamp. Read with two regular expressions, about four times faster than prometheus-client's
# parser (docs/bench.md, "agent"); any other line goes to that parser.
_SIMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{([^\\{}]*)\})? (\S+)")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"\s*,?')
# Most lines of a big broker's page are its partitions' gauges, written as the exporter writes
# them (labels in name order): each read in one match.
_PARTITION_LINE = re.compile(
    r"kafka_(log_log|cluster_partition)_"
    r"(size|logendoffset|logstartoffset|replicascount|insyncreplicascount)"
    r'\{partition="(\d+)",topic="([^"\\{}]*)"\} (\S+)'
)
_FETCH_LINE = re.compile(
    r'kafka_server_fetcherlagmetrics_consumerlag\{leader="(\d+)",partition="(\d+)",'
    r'topic="([^"\\{}]*)"\} (\S+)'
)
_PARTITION_FIELDS = {("log_log", name): (_LOG, index) for name, index in _LOG_FIELDS.items()} | {
    ("cluster_partition", name): (_ROLE, index) for name, index in _ROLE_FIELDS.items()
}


def _partition_item(line: str) -> _Item | None:
    """A partition's gauge, as ``_classify`` reads it; None for any other line."""
    if (match := _PARTITION_LINE.fullmatch(line)) is not None:
        family, field, partition, topic, raw = match.groups()
        kind_index = _PARTITION_FIELDS.get((family, field))
        if kind_index is None:
            return None
        kind, index = kind_index
    elif (match := _FETCH_LINE.fullmatch(line)) is not None:
        leader, partition, topic, raw = match.groups()
        kind, index = _FETCH, int(leader)
    else:
        return None
    try:
        return (kind, topic, int(partition), index, float(raw))
    except ValueError:
        return None


def simple_sample(line: str) -> tuple[str, dict[str, str], float] | None:
    """(name, labels, value) of a plain sample line; None for anything else."""
    match = _SIMPLE.fullmatch(line)
    if match is None:
        return None
    name, body, raw = match.groups()
    labels: dict[str, str] = {}
    if body:
        end = 0
        for pair in _LABEL.finditer(body):
            if pair.start() != end:
                return None
            labels[pair.group(1)] = pair.group(2)
            end = pair.end()
        if end != len(body):
            return None
    try:
        return name, labels, float(raw)
    except ValueError:
        return None


class PageParser:
    """Parses exporter pages. A sample line is its series (name and labels) and a value; each
    plain series is parsed once and remembered, so a line of a series seen before costs a
    split at its last space, a lookup and its value, whatever the value (a broker's partition
    gauges change every scrape). Plain lines are read by ``_partition_item`` and
    ``simple_sample``; the rest (escapes, timestamps) by prometheus-client's parser,
    remembered by whole line. The series remembered are forgotten when they outnumber twice a
    page's lines (partitions that left), so memory follows the page size."""

    def __init__(self) -> None:
        self._series: dict[str, _Key] = {}  # a plain line's series -> what it is
        self._hard: dict[str, _Item] = {}  # a line only prometheus-client reads -> its item

    def parse(self, text: str, taken_at: float) -> ExporterSample:
        page = _Page()
        add = page.add
        hard: list[str] = []  # lines only prometheus-client reads, in page order
        fresh: list[str] = []  # those not read before
        ordered: list[str] = []  # the fresh ones and the wanted families' TYPE lines
        known = self._series
        lines = text.splitlines()
        try:
            for line in lines:
                head, _, raw = line.rpartition(" ")
                key = known.get(head)  # a series seen before: wanted, and plain
                if key is None:
                    if not line.startswith(_WANTED_PREFIXES):
                        if line.startswith("# TYPE ") and line[7:].startswith(_WANTED_PREFIXES):
                            ordered.append(line)
                        continue
                    key = _plain_key(line)
                    if key is None:
                        hard.append(line)
                        if line not in self._hard:
                            fresh.append(line)
                            ordered.append(line)
                        continue
                    known[head] = key
                add(*key, float(raw))
            read = _parse_hard(fresh, ordered) if fresh else {}
        except (ValueError, KeyError, TypeError) as exc:
            raise ExporterParseError(f"exporter page is not valid Prometheus text: {exc}") from exc
        self._hard = {line: read.get(line) or self._hard[line] for line in hard}
        for item in self._hard.values():
            add(*item)
        if len(known) > 2 * len(lines):
            self._series = {}
        return page.sample(taken_at)


def _plain_key(line: str) -> _Key | None:
    """What a plain sample line's series is (its item without the value); None for a line
    only prometheus-client reads."""
    item = _partition_item(line)
    if item is None:
        sample = simple_sample(line)
        if sample is None:
            return None
        item = _classify(*sample)
    return item[:4]


def _parse_hard(hard: list[str], ordered: list[str]) -> dict[str, _Item]:
    """Lines only prometheus-client reads (escapes, timestamps), among their families' TYPE
    lines in page order: a typed family is built once, an untyped line is a family of its
    own (slower)."""
    text = "\n".join(ordered) + "\n"
    samples = [s for family in text_string_to_metric_families(text) for s in family.samples]
    if len(samples) != len(hard):
        raise ValueError(f"{len(hard)} sample lines gave {len(samples)} samples")
    by_line = dict(zip(hard, samples, strict=True))
    return {line: _classify(s.name, s.labels, float(s.value)) for line, s in by_line.items()}


class _Page:
    """What a page's lines say, gathered line by line (the most frequent kinds first)."""

    def __init__(self) -> None:
        self.broker = [0.0, 0.0, 0.0]
        self.seen_broker_bytes_in = False
        self.topics: dict[str, list[float]] = {}
        self.logs: dict[TopicPartition, list[int]] = {}
        self.under_replicated: int | None = None
        self.timers: dict[int, list[float]] = {}
        self.counts: dict[TopicPartition, list[int]] = {}  # (replicas, in-sync replicas)
        self.partition_count: int | None = None
        self.fetching: dict[TopicPartition, int] = {}

    def add(self, kind: int, topic: str, partition: int, field: int, value: float) -> None:
        if kind == _LOG:
            self.logs.setdefault((topic, partition), [0, 0, 0])[field] = int(value)
        elif kind == _TOPIC:
            self.topics.setdefault(topic, [0.0, 0.0, 0.0])[field] = value
        elif kind == _ROLE:
            self.counts.setdefault((topic, partition), [0, 0])[field] = int(value)
        elif kind == _FETCH:
            self.fetching[(topic, partition)] = field
        elif kind == _BROKER:
            self.broker[field] = value
            self.seen_broker_bytes_in = self.seen_broker_bytes_in or field == 0
        elif kind == _URP:
            self.under_replicated = int(value)
        elif kind == _COUNT:
            self.partition_count = int(value)
        elif kind in (_PRODUCE, _FLUSH):
            self.timers.setdefault(kind, [0.0, 0.0])[field] = value

    def sample(self, taken_at: float) -> ExporterSample:
        if not self.seen_broker_bytes_in:
            raise ExporterParseError(
                "exporter page lacks the broker-wide "
                "kafka_server_brokertopicmetrics_bytesinpersec; "
                "is the broker running with configs/jmx-exporter.yaml?"
            )
        timers = self.timers
        return ExporterSample(
            taken_at=taken_at,
            broker=Counters(*self.broker),
            topics={t: Counters(*c) for t, c in self.topics.items()},
            partitions={k: PartitionLog(*v) for k, v in self.logs.items()},
            under_replicated=self.under_replicated,
            produce_local=Timer(*timers[_PRODUCE]) if _PRODUCE in timers else None,
            log_flush=Timer(*timers[_FLUSH]) if _FLUSH in timers else None,
            gauges=_gauges(self.counts, self.fetching, self.partition_count, self.logs),
        )


def _gauges(
    counts: dict[TopicPartition, list[int]],
    fetching: dict[TopicPartition, int],
    partition_count: int | None,
    logs: dict[TopicPartition, list[int]],
) -> PartitionGauges | None:
    """The roles the partition gauges give; None when the broker holds partitions but the page
    has no partition gauges (a broker that is starting, or an exporter configured without
    them). Whether it holds any is its own count; a page without that count is judged by its
    logs (stray logs of partitions the broker no longer holds would count, KRaft's metadata
    log does not)."""
    if not counts:
        if partition_count is not None:
            holds = partition_count > 0
        else:
            holds = any(topic != METADATA_LOG for topic, _ in logs)
        if holds:
            return None
    leading = {tp: (c[0], c[1]) for tp, c in counts.items() if c[0] > 0}
    following = {tp: fetching.get(tp, -1) for tp, c in counts.items() if c[0] <= 0}
    return PartitionGauges(leading, following)


def parse_page(text: str, taken_at: float) -> ExporterSample:
    """Parse one exporter page (Prometheus text format) without a cache."""
    return PageParser().parse(text, taken_at)
