"""The streaming job's metrics from Spark progress reports (as Spark writes them), without
Spark: counting each batch once, idle reports, restarts with a new run id."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from prometheus_client import generate_latest

from streaming.metrics import StreamMetrics

RUN = "0b1c2d3e-0000-4000-8000-000000000001"


def progress(
    batch: int, rows: int, *, run: str = RUN, name: str = "kmedic-loads"
) -> dict[str, Any]:
    return {
        "id": "query-id",
        "runId": run,
        "name": name,
        "timestamp": "2026-11-22T15:51:04.477Z",
        "batchId": batch,
        "numInputRows": rows,
        "durationMs": {"triggerExecution": 2500, "queryPlanning": 300},
    }


def value(metrics: StreamMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"cluster": metrics.cluster, **labels})


def test_each_batch_counts_once_however_often_it_is_read() -> None:
    m = StreamMetrics()
    assert m.record_progress(progress(0, 40))
    assert not m.record_progress(progress(0, 40))
    assert m.record_progress(progress(1, 8))
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 2
    assert value(m, "kmedic_stream_input_rows_total", query="kmedic-loads") == 48


def test_the_last_batch_time_is_its_start_plus_its_duration() -> None:
    m = StreamMetrics()
    m.record_progress(progress(3, 1))
    started = datetime(2026, 11, 22, 15, 51, 4, 477000, tzinfo=UTC).timestamp()
    assert value(m, "kmedic_stream_last_batch_timestamp_seconds", query="kmedic-loads") == (
        started + 2.5
    )
    assert value(m, "kmedic_stream_batch_duration_seconds", query="kmedic-loads") == 2.5


def test_idle_reports_repeating_a_batch_id_do_not_count() -> None:
    m = StreamMetrics()
    m.record_progress(progress(5, 10))
    assert not m.record_progress(progress(5, 0))
    assert not m.record_progress(progress(4, 0))
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 1


def test_a_restarted_run_counts_from_its_checkpointed_batch() -> None:
    # After a restart Spark replays the failed batch under a new run id: it is new work.
    m = StreamMetrics()
    m.record_progress(progress(7, 10))
    assert m.record_progress(progress(7, 10, run="another-run"))
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 2


def test_queries_are_counted_apart() -> None:
    m = StreamMetrics()
    m.record_progress(progress(0, 5, name="kmedic-brokerstats-dlq"))
    m.record_progress(progress(0, 5))
    assert value(m, "kmedic_stream_batches_total", query="kmedic-brokerstats-dlq") == 1
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 1


def test_malformed_reports_are_ignored_without_raising() -> None:
    m = StreamMetrics()
    assert not m.record_progress({"name": "kmedic-loads"})
    bad_time = progress(0, 1) | {"timestamp": "yesterday", "durationMs": None}
    assert m.record_progress(bad_time)
    assert value(m, "kmedic_stream_last_batch_timestamp_seconds", query="kmedic-loads") is None


class _Report:
    """A JVM StreamingQueryProgress through py4j: its JSON from ``json()``."""

    def __init__(self, doc: dict[str, Any], reads: list[int]) -> None:
        self._doc = doc
        self._reads = reads

    def json(self) -> str:
        self._reads.append(self._doc["batchId"])
        return json.dumps(self._doc)


class _JvmQuery:
    def __init__(self, docs: list[dict[str, Any]], reads: list[int]) -> None:
        self.docs = docs
        self.reads = reads

    def recentProgress(self) -> list[_Report]:
        return [_Report(doc, self.reads) for doc in self.docs]


class _Query:
    """A PySpark StreamingQuery: ``isActive``, and the JVM query in ``_jsq``."""

    def __init__(self, active: bool, docs: list[dict[str, Any]]) -> None:
        self.isActive = active
        self.reads: list[int] = []
        self._jsq = _JvmQuery(docs, self.reads)


def test_observe_reads_progress_objects_and_counts_active_queries() -> None:
    m = StreamMetrics("c1")
    m.observe([_Query(True, [progress(0, 3), progress(1, 4)]), _Query(False, [])])
    assert value(m, "kmedic_stream_queries_active") == 1
    assert value(m, "kmedic_stream_input_rows_total", query="kmedic-loads") == 7
    m.restarts.inc()
    text = generate_latest(m.registry).decode()
    assert 'kmedic_stream_restarts_total{cluster="c1"} 1.0' in text


class _Broken:
    isActive = True

    @property
    def _jsq(self) -> Any:
        raise RuntimeError("py4j: the JVM is shutting down")


def test_an_unreadable_query_does_not_raise_and_the_others_still_count() -> None:
    m = StreamMetrics()
    m.observe([_Broken(), _Query(True, [progress(0, 2)])])
    assert value(m, "kmedic_stream_queries_active") == 2
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 1


def test_observe_reads_only_the_reports_not_counted_yet() -> None:
    m = StreamMetrics()
    query = _Query(True, [progress(b, 1) for b in range(5)])
    m.observe([query])
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 5
    assert query.reads == [4, 3, 2, 1, 0]
    query.reads.clear()
    query._jsq.docs.append(progress(5, 1))
    query._jsq.docs.append(progress(5, 0))  # Spark's idle report repeats the batch id
    m.observe([query])
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 6
    assert query.reads == [5, 5, 4]  # newest first, up to the first one already counted


def test_observe_reads_at_most_the_last_twenty_reports() -> None:
    m = StreamMetrics()
    query = _Query(True, [progress(b, 1) for b in range(100)])
    m.observe([query])
    assert query.reads == list(range(99, 79, -1))
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 20


def test_a_new_run_counts_again_from_its_first_batch() -> None:
    m = StreamMetrics()
    m.observe([_Query(True, [progress(0, 1), progress(1, 1)])])
    restarted = _Query(True, [progress(1, 1, run="run-2"), progress(2, 1, run="run-2")])
    m.observe([restarted])
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 4
