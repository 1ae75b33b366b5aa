"""Snapshot loading: valid examples load, every bad input names its field, schema in sync."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from planner_fixtures import CAPACITY, broker, part, snapshot_dict

from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import (
    SnapshotError,
    load_snapshot,
    parse_snapshot,
    snapshot_json_schema,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "configs" / "examples").glob("*.json"))


def _base() -> dict[str, Any]:
    return snapshot_dict(
        [broker(1, "/r1"), broker(2, "/r2"), broker(3, "/r3")],
        {"t": [part(0, [1, 2, 3])]},
    )


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(SnapshotError) as info:
        parse_snapshot(json.dumps(data))
    return str(info.value)


def test_schema_file_matches_the_model() -> None:
    on_disk = json.loads((ROOT / "configs" / "snapshot.schema.json").read_text())
    assert on_disk == snapshot_json_schema(), (
        "configs/snapshot.schema.json is stale: regenerate with "
        "`python -m manager.model.snapshot_file > configs/snapshot.schema.json`"
    )


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_load(path: Path) -> None:
    snap = load_snapshot(path)
    assert isinstance(snap, Snapshot)
    assert snap.schema_version == 1


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 4


def test_model_is_immutable() -> None:
    snap = parse_snapshot(json.dumps(_base()))
    with pytest.raises(Exception, match="frozen"):
        snap.brokers[0].alive = False  # type: ignore[misc]


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="cannot read snapshot"):
        load_snapshot(tmp_path / "nope.json")


def test_not_json_names_the_problem() -> None:
    with pytest.raises(SnapshotError, match="Invalid JSON"):
        parse_snapshot("{not json")


def test_missing_field_is_named() -> None:
    data = _base()
    del data["leadership"]
    assert "leadership: Field required" in _error(data)


def test_unknown_field_is_named() -> None:
    data = _base()
    data["brokers"][0]["rackk"] = "/r1"
    assert "brokers.0.rackk" in _error(data)


def test_wrong_schema_version() -> None:
    data = _base()
    data["schema_version"] = 2
    assert "schema_version" in _error(data)


def test_negative_size_is_named() -> None:
    data = _base()
    data["topics"][0]["partitions"][0]["size_bytes"] = -1
    assert "topics.0.partitions.0.size_bytes" in _error(data)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["brokers"][1].update(id=1), "brokers.1.id: duplicate broker id 1"),
        (lambda d: d["brokers"][0].update(rack="r1"), "brokers.0.rack: rack name 'r1'"),
        (lambda d: d["brokers"][0].update(rack="/a/b/c"), "brokers.0.rack"),
        (lambda d: d["brokers"][0].update(rack="//x"), "invalid segment"),
        (
            lambda d: d["brokers"][0].update(alive=False, dead_since_ms=None),
            "brokers.0.dead_since_ms: required for a dead broker",
        ),
        (
            lambda d: d["topics"][0]["partitions"][0].update(replicas=[1, 2, 9]),
            "topics.0.partitions.0.replicas: unknown brokers [9]",
        ),
        (
            lambda d: d["topics"][0]["partitions"][0].update(replicas=[1, 1, 2]),
            "topics.0.partitions.0.replicas: a broker appears twice",
        ),
        (
            lambda d: d["topics"][0]["partitions"][0].update(leader=9),
            "topics.0.partitions.0.leader: 9 is not one of the replicas",
        ),
        (
            lambda d: d["topics"][0]["partitions"][0].update(isr=[1, 7]),
            "topics.0.partitions.0.isr",
        ),
        (
            lambda d: d["topics"].append(d["topics"][0]),
            "topics.1.name: duplicate topic 't'",
        ),
        (
            lambda d: d["topics"][0]["partitions"].append(d["topics"][0]["partitions"][0]),
            "partition: duplicate partition t:0",
        ),
        (
            lambda d: d.update(
                failure_domains=[{"name": "a", "brokers": [1]}, {"name": "b", "brokers": [1]}]
            ),
            "failure_domains.1.brokers: broker 1 is already in domain 'a'",
        ),
        (
            lambda d: d.update(maintenance_domains=["nowhere"]),
            "maintenance_domains.0: unknown failure domain 'nowhere'",
        ),
        (
            lambda d: d.update(
                isolation_groups=[{"name": "i", "topics": ["t"], "primary": "missing"}]
            ),
            "isolation_groups.0.primary: unknown broker group 'missing'",
        ),
        (
            lambda d: d.update(
                reassignments=[{"topic": "t", "partition": 5, "started_by_kmedic": True}]
            ),
            "reassignments.0: unknown partition t:5",
        ),
        (
            lambda d: d.update(default_capacity=None),
            "brokers.0.capacity: missing and there is no default_capacity",
        ),
    ],
)
def test_cross_field_problems_name_the_field(mutate: Any, expected: str) -> None:
    data = _base()
    mutate(data)
    assert expected in _error(data)


def test_region_policy_requires_two_level_rack_names() -> None:
    data = _base()
    data["policy"]["placement"] = "region"
    message = _error(data)
    assert "brokers.0.rack" in message and "/region/rack" in message
    for i, b in enumerate(data["brokers"]):
        b["rack"] = f"/eu/r{i}"
    parse_snapshot(json.dumps(data))


def test_broker_capacity_overrides_default() -> None:
    data = _base()
    data["brokers"][0]["capacity"] = {**CAPACITY, "disk_bytes": 5}
    snap = parse_snapshot(json.dumps(data))
    assert snap.brokers[0].capacity is not None
    assert snap.brokers[0].capacity.disk_bytes == 5


def test_many_problems_are_listed_with_a_cap() -> None:
    data = _base()
    data["brokers"] = [broker(1, "bad") for _ in range(30)]
    message = _error(data)
    assert "more problems" in message


def test_brokers_without_rack_are_in_the_default_rack_domain() -> None:
    data = _base()
    for b in data["brokers"]:
        b["rack"] = None
    data["maintenance_domains"] = ["/default-rack"]
    snap = parse_snapshot(json.dumps(data))
    assert snap.maintenance_domains == ("/default-rack",)


def test_infinite_or_nan_load_is_rejected() -> None:
    text = json.dumps(_base()).replace('"bytes_in_per_s": 1000000', '"bytes_in_per_s": Infinity')
    assert "Infinity" in text
    with pytest.raises(SnapshotError, match=r"topics\.0\.partitions\.0\.load\.bytes_in_per_s"):
        parse_snapshot(text)
