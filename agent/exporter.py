"""The broker's Prometheus JMX exporter: scrape the page and turn it into typed counters.

Metric names follow configs/jmx-exporter.yaml. Parsing goes through prometheus-client's text
parser; lines of metrics the agent does not read are dropped before parsing, which keeps a scrape
of a broker with many partitions cheap (each partition exports several log gauges).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from kmedic.errors import KmedicError

TOPIC_METRICS = "kafka_server_brokertopicmetrics_"
LOG_METRICS = "kafka_log_log_"
URP_METRIC = "kafka_server_replicamanager_underreplicatedpartitions"
_WANTED_PREFIXES = (
    TOPIC_METRICS + "bytesinpersec",
    TOPIC_METRICS + "bytesoutpersec",
    TOPIC_METRICS + "messagesinpersec",
    LOG_METRICS + "size",
    LOG_METRICS + "logendoffset",
    LOG_METRICS + "logstartoffset",
    URP_METRIC,
    "# TYPE " + TOPIC_METRICS,
    "# TYPE " + LOG_METRICS,
)


class ExporterUnreachable(KmedicError):
    """The exporter endpoint did not answer with a page."""


class ExporterParseError(KmedicError):
    """The exporter answered, but not with the metrics the agent needs."""


@dataclass(frozen=True)
class Counters:
    """Cumulative counts since the broker started (a Kafka meter's ``Count``)."""

    bytes_in: float = 0.0
    bytes_out: float = 0.0
    messages_in: float = 0.0


@dataclass(frozen=True)
class PartitionLog:
    size: int
    log_start_offset: int
    log_end_offset: int


TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class ExporterSample:
    """One scrape. ``taken_at`` is a monotonic clock reading in seconds."""

    taken_at: float
    broker: Counters
    topics: dict[str, Counters]
    partitions: dict[TopicPartition, PartitionLog]
    under_replicated: int | None


def fetch_page(url: str, timeout_s: float) -> str:
    """GET the exporter page; any transport or HTTP failure is ExporterUnreachable."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            body: bytes = resp.read()
    except urllib.error.HTTPError as exc:
        raise ExporterUnreachable(f"exporter {url} answered HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ExporterUnreachable(f"exporter {url} unreachable: {reason}") from exc
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ExporterParseError(f"exporter {url} page is not UTF-8: {exc}") from exc


def _keep(line: str) -> bool:
    return line.startswith(_WANTED_PREFIXES)


_COUNTER_FIELDS = {"bytesinpersec": "bytes_in", "bytesoutpersec": "bytes_out"}
_COUNTER_FIELDS["messagesinpersec"] = "messages_in"
_LOG_FIELDS = {"size": 0, "logstartoffset": 1, "logendoffset": 2}


def parse_page(text: str, taken_at: float) -> ExporterSample:
    """Parse an exporter page (Prometheus text format) into an ExporterSample."""
    filtered = "\n".join(line for line in text.splitlines() if _keep(line)) + "\n"
    broker: dict[str, float] = {}
    topics: dict[str, dict[str, float]] = {}
    logs: dict[TopicPartition, list[int]] = {}
    under_replicated: int | None = None
    try:
        for family in text_string_to_metric_families(filtered):
            for sample in family.samples:
                name = sample.name
                if name.startswith(TOPIC_METRICS):
                    meter = name[len(TOPIC_METRICS) :].removesuffix("_total")
                    field = _COUNTER_FIELDS.get(meter)
                    if field is None or name.endswith("_created"):
                        continue
                    topic = sample.labels.get("topic")
                    target = broker if topic is None else topics.setdefault(topic, {})
                    target[field] = float(sample.value)
                elif name.startswith(LOG_METRICS):
                    index = _LOG_FIELDS.get(name[len(LOG_METRICS) :])
                    if index is None:
                        continue
                    key = (sample.labels["topic"], int(sample.labels["partition"]))
                    logs.setdefault(key, [0, 0, 0])[index] = int(sample.value)
                elif name == URP_METRIC:
                    under_replicated = int(sample.value)
    except (ValueError, KeyError, TypeError) as exc:
        raise ExporterParseError(f"exporter page is not valid Prometheus text: {exc}") from exc
    if "bytes_in" not in broker:
        raise ExporterParseError(
            "exporter page lacks the broker-wide kafka_server_brokertopicmetrics_bytesinpersec; "
            "is the broker running with configs/jmx-exporter.yaml?"
        )
    return ExporterSample(
        taken_at=taken_at,
        broker=Counters(**broker),
        topics={t: Counters(**c) for t, c in topics.items()},
        partitions={k: PartitionLog(v[0], v[1], v[2]) for k, v in logs.items()},
        under_replicated=under_replicated,
    )
