"""Parsing and validation of raw BrokerStats records on static DataFrames: every bad-record
class goes to the DLQ with its original bytes and a reason; every valid record passes."""

from __future__ import annotations

import json
import time
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from kmedic import brokerstats as bs
from streaming import synthetic, validate
from streaming.config import ValidationConfig
from streaming.schema import NULLABLE_LOG_DIR, NULLABLE_TOP_LEVEL, brokerstats_schema

NOW_MS = int(time.time() * 1000)  # only a bound for generated timestamps


def _now_ms() -> int:
    """Now, read when a test builds its records: the suite runs for over half an hour, so a
    time taken at collection would make "30 minutes ago" late by the time the test runs."""
    return int(time.time() * 1000)


def _valid() -> dict[str, Any]:
    layout = synthetic.Layout(brokers=3, topics=1, partitions=3, replication_factor=2)
    stats = synthetic.broker_stats(layout, broker_id=1, timestamp_ms=_now_ms() - 60_000, tick=1)
    data: dict[str, Any] = json.loads(bs.to_json(stats))
    data["reassigning"] = [
        {
            "topic": "t0",
            "partition": 2,
            "replicas": [1, 2, 3],
            "adding_replicas": [3],
            "removing_replicas": [2],
        }
    ]
    data["failure"] = None
    return data


def _with(path: str, value: Any) -> bytes:
    """A valid record with one field replaced (``a.b`` or ``leaders.0.partition``); the
    sentinel ``DELETE`` removes the field."""
    data = _valid()
    node: Any = data
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last: Any = int(parts[-1]) if isinstance(node, list) else parts[-1]
    if value == "DELETE":
        del node[last]
    else:
        node[last] = value
    return json.dumps(data).encode()


def _validate(spark: Any, values: list[bytes | None], cfg: ValidationConfig | None = None) -> Any:
    from pyspark.sql import functions as F

    rows = [(b"1", v, "kmedic.brokerstats", 0, i) for i, v in enumerate(values)]
    raw = spark.createDataFrame(
        rows, "key binary, value binary, topic string, partition int, offset long"
    ).withColumn("timestamp", F.current_timestamp())
    return validate.parse_and_validate(raw, cfg or ValidationConfig())


def _reasons(spark: Any, values: list[bytes | None], cfg: ValidationConfig | None = None) -> Any:
    validated = _validate(spark, values, cfg).orderBy("offset")
    return [(r.reason, r.detail) for r in validated.select("reason", "detail").collect()]


def test_a_valid_record_passes_with_every_field_parsed(spark: Any) -> None:
    original = _valid()
    validated = _validate(spark, [json.dumps(original).encode()])
    assert [r.reason for r in validated.collect()] == [None]
    record = validate.good_records(validated).collect()[0].asDict(recursive=True)
    assert record["schema_version"] == "1"
    for key in ("broker_id", "timestamp_ms", "cluster", "rack", "sample_id", "chunk_count"):
        assert record[key] == original[key]
    assert record["leaders"] == original["leaders"]
    assert record["followers"] == original["followers"]
    assert record["reassigning"] == original["reassigning"]
    assert record["totals"] == original["totals"]


def _bad_records() -> list[tuple[str, bytes | None, str, str]]:
    """Every bad-record class, built when the test runs (timestamps relative to then)."""
    now_ms = _now_ms()
    return [
        # (case, raw value, reason, a fragment of the detail)
        ("plain text", b"not json", "invalid_json", "not a JSON object"),
        ("truncated", b'{"schema_version": 1, "broker_id"', "invalid_json", "not a JSON object"),
        ("an array", b"[1, 2]", "invalid_json", "not a JSON object"),
        ("empty", b"", "invalid_json", "not a JSON object"),
        ("null value", None, "invalid_json", "not a JSON object"),
        ("not utf-8", b"\xff\xfe{", "invalid_json", "not a JSON object"),
        ("version 3", _with("schema_version", 3), "unsupported_schema_version", "schema_version 3"),
        ("no version", _with("schema_version", "DELETE"), "unsupported_schema_version", "missing"),
        ("version text", _with("schema_version", "one"), "unsupported_schema_version", "one"),
        ("missing broker_id", _with("broker_id", "DELETE"), "schema_mismatch", "broker_id"),
        ("broker_id text", _with("broker_id", "one"), "schema_mismatch", "broker_id"),
        ("null timestamp", _with("timestamp_ms", None), "schema_mismatch", "timestamp_ms"),
        ("leaders object", _with("leaders", {"topic": "t"}), "schema_mismatch", "leaders"),
        ("leader partition", _with("leaders.0.partition", "x"), "schema_mismatch", "partition"),
        (
            "leader no topic",
            _with("leaders.0.topic", "DELETE"),
            "schema_mismatch",
            "leaders[].topic",
        ),
        ("follower isr", _with("followers.0.in_isr", "DELETE"), "schema_mismatch", "in_isr"),
        ("totals missing", _with("totals.leader_count", "DELETE"), "schema_mismatch", "totals."),
        ("totals number", _with("totals", 7), "schema_mismatch", "totals"),
        ("negative broker", _with("broker_id", -1), "schema_mismatch", "broker_id: negative"),
        ("negative partition", _with("leaders.0.partition", -2), "schema_mismatch", "negative"),
        ("unknown estimate", _with("leaders.0.estimate", "guess"), "schema_mismatch", "estimate"),
        (
            "unknown failure",
            _with("failure", {"reason": "gremlins", "message": "x"}),
            "schema_mismatch",
            "failure.reason",
        ),
        ("failure text", _with("failure", {"reason": "disk_error"}), "schema_mismatch", "failure"),
        ("chunk index", _with("chunk_index", 3), "schema_mismatch", "chunk_index"),
        ("zero interval", _with("interval_s", 0), "schema_mismatch", "interval_s"),
        (
            "negative rate",
            _with("leaders.0.bytes_in_per_s", -5.0),
            "invalid_rate",
            "bytes_in_per_s",
        ),
        ("NaN rate", _with("leaders.0.bytes_out_per_s", float("nan")), "invalid_rate", "bytes_out"),
        (
            "inf rate",
            _with("leaders.0.messages_in_per_s", float("inf")),
            "invalid_rate",
            "messages",
        ),
        ("negative total", _with("totals.bytes_in_per_s", -1.0), "invalid_rate", "totals."),
        ("NaN window", _with("rate_window_s", float("nan")), "invalid_rate", "rate_window_s"),
        ("future", _with("timestamp_ms", now_ms + 3_600_000), "future_timestamp", "ahead of"),
        (
            "late",
            _with("timestamp_ms", now_ms - 3 * 3_600_000),
            "late_record",
            "past the watermark",
        ),
    ]


# Lateness is counted from the Kafka append time (now, in these tests).
LATENESS = ValidationConfig(max_lateness="1h")


def test_a_record_of_the_moving_partitions_passes(spark: Any) -> None:
    """Version 2 (scope moving: the agent's busy samples between whole records) is read, not
    sent to the DLQ as an unknown version; its entries are left out of the loads as every
    partition with a reassignment in progress is."""
    moving = {**_valid(), "schema_version": 2, "scope": "moving"}
    validated = _validate(spark, [json.dumps(moving).encode()])
    assert [r.reason for r in validated.collect()] == [None]
    record = validate.good_records(validated).collect()[0].asDict(recursive=True)
    assert (record["schema_version"], record["scope"]) == ("2", "moving")


def test_an_agents_heartbeats_are_left_out_not_sent_to_the_dlq(spark: Any) -> None:
    beat = bs.Heartbeat(
        heartbeat=1, cluster="c", broker_id=1, timestamp_ms=1, next_within_s=5.0, listening=True
    )
    values = [bs.to_json(beat), json.dumps(_valid()).encode(), b'{"heartbeat": 2, "odd": 1}']
    validated = _validate(spark, values).orderBy("offset")
    # The sample passes; whatever begins as a heartbeat is the manager's to read (and to count
    # as undecodable when it is no heartbeat it knows), not the job's.
    assert [(r.offset, r.reason) for r in validated.collect()] == [(1, None)]


def test_every_bad_record_class_gets_its_reason(spark: Any) -> None:
    bad_records = _bad_records()
    got = _reasons(spark, [value for _, value, _, _ in bad_records], LATENESS)
    for (case, _, reason, fragment), (got_reason, detail) in zip(bad_records, got, strict=True):
        assert got_reason == reason, f"{case}: {got_reason} ({detail})"
        assert fragment in detail, f"{case}: {detail!r} lacks {fragment!r}"
    assert {reason for _, _, reason, _ in bad_records} == set(validate.REASONS) - {"oversize_array"}


def test_oversize_arrays_are_refused_for_each_array(spark: Any) -> None:
    cfg = ValidationConfig(max_array_entries=2)
    base = _valid()
    assert len(base["leaders"]) <= 2
    values = []
    for array in ("leaders", "followers", "reassigning", "log_dirs"):
        data = _valid()
        data[array] = data[array] * 3 if data[array] else []
        assert len(data[array]) > 2, array
        values.append(json.dumps(data).encode())
    got = _reasons(spark, values, cfg)
    for array, (reason, detail) in zip(
        ("leaders", "followers", "reassigning", "log_dirs"), got, strict=True
    ):
        assert reason == "oversize_array"
        assert detail.startswith(f"{array} has ") and "more than 2" in detail


def test_a_future_timestamp_within_the_allowed_skew_passes(spark: Any) -> None:
    cfg = ValidationConfig(max_future_skew="1h")
    got = _reasons(spark, [_with("timestamp_ms", _now_ms() + 600_000)], cfg)
    assert got == [(None, None)]


def test_lateness_within_the_bound_passes_and_no_bound_checks_none(spark: Any) -> None:
    values = [_with("timestamp_ms", _now_ms() - 30 * 60_000), _with("timestamp_ms", 0)]
    assert [reason for reason, _ in _reasons(spark, values, LATENESS)] == [None, "late_record"]
    assert _reasons(spark, values, ValidationConfig()) == [(None, None), (None, None)]


def test_nullable_fields_may_be_null(spark: Any) -> None:
    values = [_with(name, None) for name in sorted(NULLABLE_TOP_LEVEL)]
    values.append(_with("log_dirs.0.total_bytes", None))
    assert _reasons(spark, values) == [(None, None)] * len(values)


def test_dlq_rows_keep_the_original_bytes_and_name_the_reason(spark: Any) -> None:
    bad = b"\x00\x01 not json at all"
    validated = _validate(spark, [json.dumps(_valid()).encode(), bad])
    rows = validate.dlq_rows(validated).collect()
    assert len(rows) == 1
    assert bytes(rows[0].key) == b"1"
    assert bytes(rows[0].value) == bad
    headers = {h.key: bytes(h.value).decode() for h in rows[0].headers}
    assert headers["kmedic.reason"] == "invalid_json"
    assert "JSON" in headers["kmedic.detail"]
    assert headers["kmedic.source"] == "kmedic.brokerstats/0/1"
    assert int(headers["kmedic.source.timestamp_ms"]) > 0
    assert validate.good_records(validated).count() == 1


def _model_fields(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields)


def test_the_spark_schema_matches_the_brokerstats_model() -> None:
    schema = brokerstats_schema()
    assert set(schema.fieldNames()) == _model_fields(bs.BrokerStats)
    nested = {
        "failure": bs.Failure,
        "leaders": bs.LeaderReplica,
        "followers": bs.FollowerReplica,
        "reassigning": bs.ReassigningReplica,
        "log_dirs": bs.LogDir,
        "totals": bs.Totals,
    }
    for name, model in nested.items():
        kind = schema[name].dataType
        struct = getattr(kind, "elementType", kind)
        assert set(struct.fieldNames()) == _model_fields(model), name
    optional = {n for n, f in bs.BrokerStats.model_fields.items() if not _required(f.annotation)}
    assert optional == NULLABLE_TOP_LEVEL
    log_dir_optional = {n for n, f in bs.LogDir.model_fields.items() if not _required(f.annotation)}
    assert log_dir_optional == NULLABLE_LOG_DIR


def _required(annotation: Any) -> bool:
    return type(None) not in get_args(annotation)


rates = st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False)


@st.composite
def leader_replicas(draw: st.DrawFn) -> bs.LeaderReplica:
    return bs.LeaderReplica(
        topic=draw(st.text(min_size=1, max_size=20)),
        partition=draw(st.integers(0, 10_000)),
        bytes_in_per_s=draw(rates),
        bytes_out_per_s=draw(rates),
        messages_in_per_s=draw(rates),
        log_size_bytes=draw(st.integers(0, 2**62)),
        log_start_offset=draw(st.integers(0, 2**62)),
        log_end_offset=draw(st.integers(0, 2**62)),
        estimate=draw(st.sampled_from(get_args(bs.RateEstimate))),
    )


@st.composite
def valid_records(draw: st.DrawFn) -> bytes:
    base = bs.BrokerStats.model_validate(_valid())
    failure = draw(
        st.none()
        | st.builds(bs.Failure, reason=st.sampled_from(bs.FAILURE_REASONS), message=st.text())
    )
    stats = base.model_copy(
        update={
            "broker_id": draw(st.integers(0, 2**31 - 1)),
            "timestamp_ms": draw(st.integers(0, NOW_MS)),
            "rack": draw(st.none() | st.text(max_size=10)),
            "cluster": draw(st.text(min_size=1, max_size=10)),
            "failure": failure,
            "leaders": draw(st.lists(leader_replicas(), max_size=5)),
        }
    )
    return bs.to_json(stats)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(valid_records(), min_size=1, max_size=20))
def test_records_the_model_accepts_always_pass(spark: Any, values: list[bytes]) -> None:
    # Each example is a whole batch: one Spark job checks up to 20 model-built records.
    got = _reasons(spark, list(values))
    assert got == [(None, None)] * len(values)


@pytest.mark.parametrize("version", [[1], [1, 2]])
def test_supported_versions_come_from_config(spark: Any, version: list[int]) -> None:
    cfg = ValidationConfig(supported_schema_versions=version)
    got = _reasons(spark, [_with("schema_version", 2)], cfg)
    expected = "unsupported_schema_version" if 2 not in version else None
    # Version 2 records have the v1 shape here, so once accepted they pass every check.
    assert got[0][0] == expected
