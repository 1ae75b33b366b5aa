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


class _Query:
    def __init__(self, active: bool, reports: list[Any]) -> None:
        self.isActive = active
        self.recentProgress = reports


class _Report:
    """PySpark 4's StreamingQueryProgress: the report's JSON in ``.json``."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.json = json.dumps(doc)


def test_observe_reads_progress_objects_and_counts_active_queries() -> None:
    m = StreamMetrics("c1")
    m.observe([_Query(True, [_Report(progress(0, 3)), _Report(progress(1, 4))]), _Query(False, [])])
    assert value(m, "kmedic_stream_queries_active") == 1
    assert value(m, "kmedic_stream_input_rows_total", query="kmedic-loads") == 7
    m.restarts.inc()
    text = generate_latest(m.registry).decode()
    assert 'kmedic_stream_restarts_total{cluster="c1"} 1.0' in text


class _Broken:
    isActive = True

    @property
    def recentProgress(self) -> list[Any]:
        raise RuntimeError("py4j: the JVM is shutting down")


def test_an_unreadable_query_does_not_raise_and_the_others_still_count() -> None:
    m = StreamMetrics()
    m.observe([_Broken(), _Query(True, [progress(0, 2)])])
    assert value(m, "kmedic_stream_queries_active") == 2
    assert value(m, "kmedic_stream_batches_total", query="kmedic-loads") == 1
