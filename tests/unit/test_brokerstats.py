"""The BrokerStats record: committed JSON Schema, round trip, validation, one-line summary."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmedic import brokerstats as bs
from kmedic.errors import KmedicError


def _record(**overrides: Any) -> bs.BrokerStats:
    base: dict[str, Any] = {
        "schema_version": 1,
        "sample_id": "1-1700000000000",
        "chunk_index": 0,
        "chunk_count": 1,
        "cluster": "local",
        "broker_id": 1,
        "host": "127.0.0.1",
        "rack": "/r1",
        "timestamp_ms": 1_700_000_000_000,
        "interval_s": 60.0,
        "rate_window_s": 60.0,
        "agent_version": "0.1.0",
        "kafka_version": "4.1",
        "failure": None,
        "leaders": [
            {
                "topic": "t",
                "partition": 0,
                "bytes_in_per_s": 1_000_000.0,
                "bytes_out_per_s": 2_000_000.0,
                "messages_in_per_s": 10.0,
                "log_size_bytes": 5_000_000,
                "log_start_offset": 0,
                "log_end_offset": 500,
                "estimate": "size_delta",
            }
        ],
        "followers": [
            {
                "topic": "t",
                "partition": 1,
                "leader_id": 2,
                "log_size_bytes": 10,
                "log_end_offset": 1,
                "in_isr": True,
            }
        ],
        "reassigning": [
            {
                "topic": "t",
                "partition": 1,
                "replicas": [2, 1, 3],
                "adding_replicas": [3],
                "removing_replicas": [1],
            }
        ],
        "log_dirs": [
            {
                "path": "/data",
                "total_bytes": 100_000_000_000,
                "free_bytes": 25_000_000_000,
                "replica_bytes": 5_000_010,
                "error": None,
            }
        ],
        "totals": {
            "bytes_in_per_s": 1_000_000.0,
            "bytes_out_per_s": 2_000_000.0,
            "messages_in_per_s": 10.0,
            "leader_count": 1,
            "follower_count": 1,
            "reassigning_count": 1,
            "under_replicated_count": 0,
            "log_size_bytes": 5_000_010,
        },
    }
    base.update(overrides)
    return bs.BrokerStats.model_validate(base)


def test_committed_schema_matches_the_model() -> None:
    committed = bs.SCHEMA_PATH.read_text()
    assert committed == bs.render_json_schema(), (
        "configs/brokerstats.schema.json is stale: run `python -m kmedic.brokerstats`"
    )


def test_schema_names_every_field_with_a_description() -> None:
    schema = bs.json_schema()
    assert schema["properties"]["schema_version"]["enum"] == [1, 2]
    for name, definition in [("BrokerStats", schema), *schema["$defs"].items()]:
        for field, prop in definition["properties"].items():
            assert prop.get("description"), f"{name}.{field} has no description"


def test_schema_uses_no_free_form_maps() -> None:
    """Downstream parses with a fixed schema: no dicts keyed by dynamic strings."""
    text = json.dumps(bs.json_schema())
    assert '"additionalProperties": true' not in text
    for definition in [bs.json_schema(), *bs.json_schema()["$defs"].values()]:
        assert definition.get("additionalProperties") is False


def test_round_trip_is_lossless() -> None:
    record = _record()
    assert bs.from_json(bs.to_json(record)) == record


def test_failure_record_round_trips() -> None:
    record = _record(
        failure={"reason": "exporter_unreachable", "message": "connection refused"},
        leaders=[],
        followers=[],
        reassigning=[],
        rate_window_s=None,
    )
    again = bs.from_json(bs.to_json(record))
    assert again.failure is not None
    assert again.failure.reason == "exporter_unreachable"


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"schema_version": 2}, "schema_version"),
        ({"broker_id": -1}, "broker_id"),
        ({"interval_s": 0}, "interval_s"),
        ({"failure": {"reason": "on_fire", "message": "x"}}, "failure.reason"),
        ({"unexpected": 1}, "unexpected"),
    ],
)
def test_bad_records_are_rejected_naming_the_field(patch: dict[str, Any], field: str) -> None:
    data = json.loads(bs.to_json(_record()))
    data.update(patch)
    with pytest.raises(KmedicError, match=field.replace(".", r"\.")):
        bs.from_json(json.dumps(data))


def test_not_json_is_a_clear_error() -> None:
    with pytest.raises(KmedicError, match="invalid BrokerStats record"):
        bs.from_json(b"{not json")


def test_summarize_healthy() -> None:
    line = bs.summarize(_record())
    assert line == (
        "broker 1 rack /r1: 1 leaders 1 followers (0 under-replicated, 1 reassigning),"
        " in 1.00 MB/s out 2.00 MB/s, logs 5.00 MB, disk 75% used, 25.0 GB free"
    )
    assert "\n" not in line


def test_summarize_failure_and_warmup() -> None:
    failed = _record(failure={"reason": "broker_unreachable", "message": "no route"})
    assert bs.summarize(failed) == "broker 1 rack /r1: FAILED broker_unreachable: no route"
    warming = _record(rate_window_s=None, log_dirs=[], rack=None)
    line = bs.summarize(warming)
    assert "rates warming up" in line and "disk unknown" in line and "rack -" in line


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
_rates = st.floats(min_value=0, max_value=1e12, allow_nan=False)
_counts = st.integers(min_value=0, max_value=2**62)


@given(
    topic=_names,
    partition=st.integers(min_value=0, max_value=100_000),
    rates=st.tuples(_rates, _rates, _rates),
    sizes=st.tuples(_counts, _counts, _counts),
    rack=st.none() | _names,
)
def test_round_trip_property(
    topic: str,
    partition: int,
    rates: tuple[float, float, float],
    sizes: tuple[int, int, int],
    rack: str | None,
) -> None:
    leader = {
        "topic": topic,
        "partition": partition,
        "bytes_in_per_s": rates[0],
        "bytes_out_per_s": rates[1],
        "messages_in_per_s": rates[2],
        "log_size_bytes": sizes[0],
        "log_start_offset": sizes[1],
        "log_end_offset": sizes[2],
        "estimate": "offset_share",
    }
    record = _record(leaders=[leader], rack=rack)
    assert bs.from_json(bs.to_json(record)) == record
