"""docs/snapshot.md documents every field the snapshot writer produces, each in the section of
its object, and documents no field that does not exist: the two cannot drift apart again."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from planner_fixtures import NOW, broker, make, part

from manager.daemon.observation import save_snapshot

DOC = Path(__file__).resolve().parents[2] / "docs" / "snapshot.md"
# Where each object's fields are documented, by the first step of their path.
SECTIONS = {
    "brokers": "## Broker",
    "default_capacity": "## Broker",
    "topics": "## Topic and partition",
    "reassignments": "## Reassignment",
    "policy": "## Policy",
    "leadership": "## Leadership",
    "requests": "## Operator requests",
    "quorum": "## Controller quorum",
}


def _written(tmp_path: Path) -> dict[str, Any]:
    """A snapshot with every optional part present, written as the manager writes it."""
    partitions = [part(0, [1, 2], alive={2}), part(1, [2, 1], size=5)]
    partitions[1]["offline_replicas"] = [1]
    snap = make(
        [
            broker(1, "/r1", alive=False),
            broker(2, "/r2", returned_at_ms=NOW - 5, disk_used_bytes=10),
            broker(
                3,
                "/r1",
                capacity={"network_in_bytes_per_s": 1, "network_out_bytes_per_s": 1}
                | {"disk_bytes": 1},
            ),
        ],
        {"t": partitions},
        reassignments=[
            {"topic": "t", "partition": 1, "adding_replicas": [3], "removing_replicas": [1]}
            | {"started_by_kmedic": False}
        ],
        failure_domains=[{"name": "d1", "brokers": [1]}],
        broker_groups=[{"name": "g", "brokers": [2, 3]}],
        isolation_groups=[{"name": "i", "topics": ["t"], "primary": "g", "secondary": None}],
        anti_affinity_groups=[{"name": "a", "topics": ["t"]}],
        maintenance_domains=["d1"],
        recent_actions={"moves_last_hour": 1},
        requests=[
            {"id": "r1", "kind": "drain", "brokers": [3], "created_ms": NOW},
            {"id": "r2", "kind": "set_rf", "topic": "t", "replication_factor": 3}
            | {"created_ms": NOW},
        ],
        quorum={
            "state": "led",
            "leader": 100,
            "voters": [{"id": 100, "lag": 0, "last_fetch_age_ms": 5}],
            "error": None,
        },
    )
    path = tmp_path / "snapshot.json"
    save_snapshot(path, snap)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _paths(node: Any, prefix: str = "") -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            out.add(prefix + key)
            out |= _paths(value, f"{prefix}{key}.")
    elif isinstance(node, list):
        for item in node:
            out |= _paths(item, prefix)
    return out


def _section(doc: str, title: str) -> str:
    start = doc.index(title + "\n")
    end = doc.find("\n## ", start + len(title))
    return doc[start : end if end >= 0 else len(doc)]


def _documented_as(path: str) -> tuple[str, str]:
    """The section a field belongs in, and the name it is documented by there."""
    steps = path.split(".")
    if len(steps) == 1:
        return "## Top level", steps[0]
    title = SECTIONS.get(steps[0], "## Top level")
    if steps[0] == "policy" and len(steps) == 3:
        return title, ".".join(steps[1:])  # limits.disk_fraction
    return title, steps[-1]


def test_every_written_field_is_documented_in_its_section(tmp_path: Path) -> None:
    doc = DOC.read_text()
    paths = _paths(_written(tmp_path))
    assert {"requests.kind", "topics.partitions.offline_replicas"} <= paths
    assert "policy.max_failed_disk_brokers" in paths
    missing = []
    for path in sorted(paths):
        title, name = _documented_as(path)
        if not re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", _section(doc, title)):
            missing.append(f"{path} (in {title!r})")
    assert not missing, f"docs/snapshot.md does not document: {missing}"


def test_every_documented_field_exists(tmp_path: Path) -> None:
    doc = DOC.read_text()
    names = {_documented_as(p)[1] for p in _paths(_written(tmp_path))}
    rows = re.findall(r"^\| `([\w.]+)` \|", doc, flags=re.M)
    assert len(rows) > 40
    stale = sorted(set(rows) - names)
    assert not stale, f"docs/snapshot.md documents fields the snapshot does not have: {stale}"
