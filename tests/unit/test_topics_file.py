"""A snapshot file's topics read straight into columns (manager.model.topics_file) agree with
pydantic: whatever the reader accepts, pydantic accepts and lays out as the same table; what
is plainly well-formed it does accept; and the column checks of a snapshot's partitions find
a problem exactly when the per-partition checks name one."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from planner_fixtures import broker, part, snapshot_dict
from pydantic import TypeAdapter, ValidationError

from kmedic.partition_table import PartitionTable, Ragged
from manager.model import snapshot_file
from manager.model.partition_models import Partition, PartitionLoad, Topic
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import SnapshotError, parse_snapshot
from manager.model.topics import table_of, topics_table
from manager.model.topics_file import (
    LoadFields,
    PartitionFields,
    TopicFields,
    table_from_json,
)

TOPICS = TypeAdapter(tuple[Topic, ...])


@pytest.mark.parametrize(
    ("fields", "model"),
    [(TopicFields, Topic), (PartitionFields, Partition), (LoadFields, PartitionLoad)],
)
def test_the_structs_have_the_models_fields_and_defaults(fields: Any, model: Any) -> None:
    info = msgspec.structs.fields(fields)
    assert [f.name for f in info] == list(model.model_fields)
    for f in info:
        declared = model.model_fields[f.name]
        assert f.required == declared.is_required(), f.name
        if not f.required:
            assert f.default == declared.default, f.name


def _ragged_equal(a: Ragged | None, b: Ragged | None) -> bool:
    assert a is not None and b is not None
    return np.array_equal(a.start, b.start) and np.array_equal(a.values, b.values)


def _tables_equal(a: PartitionTable, b: PartitionTable) -> None:
    assert a.names == b.names
    for name in ("topic", "partition", "leader", "size", "min_insync"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("replicas", "isr", "offline", "eligible"):
        assert _ragged_equal(getattr(a, name), getattr(b, name)), name
    assert a.loads is not None and b.loads is not None
    for name in ("bytes_in", "bytes_out", "messages_in", "valid"):
        x, y = getattr(a.loads, name), getattr(b.loads, name)
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), name


# Any JSON value, weighted toward the ones a snapshot's numbers could be mistaken for.
odd = st.one_of(
    st.integers(-3, 8),
    st.sampled_from([2**31, 2**63, 2**70, -(2**31) - 1, 1.0, 2.5, -0.0, 1e300]),
    st.booleans(),
    st.none(),
    st.text(max_size=2),
    st.lists(st.integers(-1, 8), max_size=3),
    st.just({}),
)
ids = st.lists(st.integers(0, 8), max_size=4)


def _field(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a valid value, sometimes any odd one, sometimes left out (``...``)."""
    return st.one_of(valid, valid, valid, valid, odd, st.just(...))


loads = st.fixed_dictionaries(
    {
        "bytes_in_per_s": _field(st.floats(0, 1e9) | st.integers(0, 10**6)),
        "bytes_out_per_s": _field(st.floats(0, 1e9)),
        "messages_in_per_s": _field(st.floats(0, 1e6)),
        "window_valid": _field(st.booleans()),
    }
)
partitions = st.fixed_dictionaries(
    {
        "partition": _field(st.integers(0, 50)),
        "replicas": _field(ids),
        "isr": _field(ids),
        "leader": _field(st.integers(0, 8) | st.none()),
        "size_bytes": _field(st.integers(0, 2**40)),
        "load": _field(loads | st.none()),
        "offline_replicas": _field(ids),
        "eligible_leaders": _field(ids),
    },
    optional={"unknown": st.integers()},
)
topics = st.lists(
    st.fixed_dictionaries(
        {
            "name": _field(st.text(min_size=1, max_size=3)),
            "partitions": _field(st.lists(partitions, max_size=4)),
            "min_insync_replicas": _field(st.integers(1, 3) | st.none()),
        }
    ),
    max_size=3,
)


def _json(value: Any) -> Any:
    """The value with its left-out fields (``...``) removed."""
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items() if v is not ...}
    if isinstance(value, list):
        return [_json(v) for v in value]
    return value


@settings(max_examples=600, deadline=None)
@given(topics)
def test_what_the_reader_accepts_pydantic_lays_out_as_the_same_table(drawn: Any) -> None:
    text = json.dumps(_json(drawn))
    table = table_from_json(text.encode())
    try:
        models = TOPICS.validate_json(text)
    except ValidationError:
        assert table is None, "read a file pydantic refuses"
        return
    if table is not None:
        _tables_equal(table, table_of(models))


plain_partitions = st.fixed_dictionaries(
    {
        "partition": st.integers(0, 50),
        "replicas": st.lists(st.integers(0, 8), min_size=1, max_size=4),
        "isr": ids,
        "leader": st.integers(0, 8) | st.none(),
        "size_bytes": st.integers(0, 2**62),
    },
    optional={
        "load": st.none()
        | st.fixed_dictionaries(
            {
                "bytes_in_per_s": st.floats(0, 1e12) | st.integers(0, 10**9),
                "bytes_out_per_s": st.floats(0, 1e12),
                "messages_in_per_s": st.floats(0, 1e9),
            },
            optional={"window_valid": st.booleans()},
        ),
        "offline_replicas": ids,
        "eligible_leaders": ids,
    },
)
plain_topics = st.lists(
    st.fixed_dictionaries(
        {"name": st.text(min_size=1, max_size=3), "partitions": st.lists(plain_partitions)},
        optional={"min_insync_replicas": st.integers(1, 2**31 - 1) | st.none()},
    ),
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(plain_topics)
def test_a_plainly_well_formed_file_is_read_as_columns(drawn: Any) -> None:
    text = json.dumps(drawn)
    table = table_from_json(text.encode())
    assert table is not None
    _tables_equal(table, table_of(TOPICS.validate_json(text)))


def test_what_is_not_plainly_well_formed_goes_to_pydantic() -> None:
    topic = {"name": "t", "partitions": [part(0, [1, 2])]}
    assert table_from_json(json.dumps([topic]).encode()) is not None
    for changed in (
        {"name": "t", "partitions": [{**part(0, [1, 2]), "leader": -1}]},  # not null
        {"name": "t", "partitions": [part(0, [1, 2])], "min_insync_replicas": 0},
        {"name": "", "partitions": [part(0, [1, 2])]},
        {"name": "t", "partitions": [{**part(0, [1, 2]), "partition": 2**31}]},
        {"name": "t", "partitions": [part(0, [1, 2], bytes_out=-1.0)]},
        {"name": "t", "partitions": [part(0, [1, 2], bytes_in=float("inf"))]},
        {"name": "t", "partitions": [{**part(0, [1, 2]), "size_bytes": 2**63}]},
        {"name": "t", "partitions": [part(0, [1, 2], isr=[1, -2])]},
    ):
        assert table_from_json(json.dumps([changed]).encode()) is None, changed


# The column checks and the per-partition checks agree.
checked = st.lists(
    st.tuples(
        st.integers(0, 3),  # partition number (duplicates possible)
        st.lists(st.integers(1, 5), min_size=1, max_size=4),  # replicas (5 is unknown)
        st.lists(st.integers(1, 5), max_size=4),  # ISR
        st.integers(1, 5) | st.none(),  # leader
    ),
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(checked, st.booleans())
def test_the_column_checks_find_a_problem_when_the_partition_checks_name_one(
    drawn: list[tuple[int, list[int], list[int], int | None]], twice: bool
) -> None:
    brokers = [broker(b, f"/r{b}") for b in (1, 2, 3, 4)]
    partitions_ = [part(n, r, isr=i, leader=leader) for n, r, i, leader in drawn]
    data = snapshot_dict(brokers, {"t": partitions_})
    if twice:
        data["topics"].append(data["topics"][0])
    snap = Snapshot.model_validate(data)
    known = {1, 2, 3, 4}
    assert snapshot_file._sound(topics_table(snap.topics), known) == (
        snapshot_file._check_partitions(snap, known) == []
    )


def test_a_number_beyond_kafkas_32_bits_is_named_not_a_traceback() -> None:
    data = snapshot_dict([broker(1, "/r1")], {"t": [part(0, [1])]})
    data["topics"][0]["partitions"][0]["partition"] = 2**40
    with pytest.raises(SnapshotError, match=r"topics\.0\.partitions\.0\.partition"):
        parse_snapshot(json.dumps(data))
    data = snapshot_dict([broker(2**40, "/r1")], {"t": [part(0, [2**40])]})
    with pytest.raises(SnapshotError, match=r"brokers\.0\.id"):
        parse_snapshot(json.dumps(data))


def test_a_file_read_as_columns_holds_what_pydantic_would_have_built() -> None:
    data = snapshot_dict(
        [broker(1, "/r1"), broker(2, "/r2"), broker(3, "/r3", alive=False)],
        {"b": [part(1, [2, 3], leader=None), part(0, [1, 2])], "a": [part(0, [3, 1])]},
    )
    text = json.dumps(data)
    read = parse_snapshot(text)
    assert read.topics._models is None  # read as columns
    assert read == Snapshot.model_validate_json(text)
