"""Load and validate a JSON snapshot; every problem is reported with the field it is in.

Field validation (types, ranges, unknown fields) is pydantic's; the cross-field checks below
catch what a schema cannot: replicas on unknown brokers, a leader outside its replicas, rack
names that do not fit the placement policy, a broker in two failure domains, and so on.

A plainly well-formed file's topics are read straight into the partition table
(``manager.model.topics_file``) and checked column by column; anything else goes to
pydantic and to the per-partition checks, which name what is wrong.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from pydantic import ValidationError

from kmedic.errors import KmedicError
from kmedic.gc_pause import collector_paused
from kmedic.partition_table import PartitionTable, Ragged
from manager.model.partition_models import Partition
from manager.model.racks import location_of, rack_name_problem
from manager.model.snapshot import Snapshot
from manager.model.topics import Topics, topics_table
from manager.model.topics_file import table_from_json

MAX_PROBLEMS_SHOWN = 20


class SnapshotError(KmedicError):
    """The snapshot is unreadable or invalid; the message names every field at fault."""


def _loc(parts: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in parts) or "(top level)"


def parse_snapshot(data: str | bytes, *, source: str = "snapshot") -> Snapshot:
    """Parse JSON text into a validated Snapshot, or raise SnapshotError naming the fields.

    The collector is paused meanwhile (kmedic.gc_pause): the millions of objects a fleet's
    snapshot is made of hold no reference cycles, and at 1.3 M replicas its walks would
    triple the load.
    """
    with collector_paused():
        snapshot = _well_formed(data)
        if snapshot is None:
            try:
                snapshot = Snapshot.model_validate_json(data)
            except ValidationError as exc:
                lines = [f"{source}: {_loc(tuple(e['loc']))}: {e['msg']}" for e in exc.errors()]
                raise SnapshotError(_join(lines)) from None
        problems = find_problems(snapshot)
    if problems:
        raise SnapshotError(_join([f"{source}: {p}" for p in problems]))
    return snapshot


def _well_formed(data: str | bytes) -> Snapshot | None:
    """The snapshot of a plainly well-formed file, its topics read as columns; None: pydantic
    validates the whole file (the fields other than the topics are pydantic's either way)."""
    try:
        fields = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    table = table_from_json(bytes(fields.pop("topics", b"[]")))
    if table is None:
        return None
    rest = b",".join(msgspec.json.encode(key) + b":" + bytes(raw) for key, raw in fields.items())
    try:
        snapshot = Snapshot.model_validate_json(b"{" + rest + b"}")
    except ValidationError:
        return None
    return snapshot.model_copy(update={"topics": Topics(table)})


def load_snapshot(path: str | Path) -> Snapshot:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror}") from None
    return parse_snapshot(data, source=str(path))


def _join(lines: list[str]) -> str:
    shown = lines[:MAX_PROBLEMS_SHOWN]
    if len(lines) > len(shown):
        shown.append(f"... and {len(lines) - len(shown)} more problems")
    return "\n".join(shown)


def find_problems(snap: Snapshot) -> list[str]:
    """Every cross-field problem, each naming its field path."""
    problems: list[str] = []
    kind = snap.policy.placement
    broker_ids: set[int] = set()
    for i, b in enumerate(snap.brokers):
        where = f"brokers.{i}"
        if b.id in broker_ids:
            problems.append(f"{where}.id: duplicate broker id {b.id}")
        broker_ids.add(b.id)
        if b.rack is not None and (why := rack_name_problem(b.rack, kind)):
            problems.append(f"{where}.rack: {why}")
        if not b.alive and b.dead_since_ms is None:
            problems.append(f"{where}.dead_since_ms: required for a dead broker ({b.id})")
        if b.capacity is None and snap.default_capacity is None:
            problems.append(f"{where}.capacity: missing and there is no default_capacity")
    problems += _check_topics(snap, broker_ids)
    problems += _check_groups(snap, broker_ids)
    for ri, r in enumerate(snap.requests):
        unknown = sorted(b for b in r.brokers if b not in broker_ids)
        if unknown:
            problems.append(f"requests.{ri}.brokers: unknown brokers {unknown} ({r.id})")
    return problems


def _check_topics(snap: Snapshot, broker_ids: set[int]) -> list[str]:
    table = topics_table(snap.topics)
    if _sound(table, broker_ids):
        return _check_reassignments(snap, lambda t, p: table.row_of(t, p) is not None)
    return _check_partitions(snap, broker_ids)


def _sound(table: PartitionTable, broker_ids: set[int]) -> bool:
    """No partition problem, checked column by column (the per-partition checks name any)."""
    if len(set(table.names)) != len(table.names):
        return False
    keys = (table.topic.astype(np.int64) << 32) | table.partition
    if not (np.diff(keys) > 0).all() and len(np.unique(keys)) != len(keys):
        return False
    known = np.fromiter(broker_ids, dtype=np.int64, count=len(broker_ids))
    if not np.isin(table.replicas.values, known).all():
        return False
    if len(table.replicas.rows_repeating()) or len(table.isr.rows_outside(table.replicas)):
        return False
    # A leader is mostly its partition's first replica; only the others are looked up.
    rows = np.flatnonzero((table.leader >= 0) & (table.leader != table.replicas.firsts()))
    leader = Ragged.from_counts(np.ones(len(rows), dtype=np.int64), table.leader[rows])
    return len(leader.rows_outside(table.replicas.take(rows))) == 0


def _check_reassignments(snap: Snapshot, known: Callable[[str, int], bool]) -> list[str]:
    problems = []
    for ri, r in enumerate(snap.reassignments):
        if not known(r.topic, r.partition):
            problems.append(f"reassignments.{ri}: unknown partition {r.topic}:{r.partition}")
    return problems


def _check_partitions(snap: Snapshot, broker_ids: set[int]) -> list[str]:
    problems: list[str] = []
    partitions: dict[str, set[int]] = {}
    for ti, topic in enumerate(snap.topics):
        if topic.name in partitions:
            problems.append(f"topics.{ti}.name: duplicate topic {topic.name!r}")
        seen = partitions.setdefault(topic.name, set())
        for pi, p in enumerate(topic.partitions):
            # One pass, one set per partition on the good path: a snapshot of 1.3 M replicas
            # is checked in a fifth of its load (docs/bench.md, "planner").
            replicas = set(p.replicas)
            if (
                p.partition in seen
                or len(replicas) != len(p.replicas)
                or not broker_ids.issuperset(replicas)
                or not replicas.issuperset(p.isr)
                or (p.leader not in replicas and p.leader is not None)
            ):
                where = f"topics.{ti}.partitions.{pi}"
                problems += _partition_problems(where, topic.name, p, seen, broker_ids)
            seen.add(p.partition)
    return problems + _check_reassignments(snap, lambda t, p: p in partitions.get(t, ()))


def _partition_problems(
    where: str, topic: str, p: Partition, seen: set[int], broker_ids: set[int]
) -> list[str]:
    problems: list[str] = []
    if p.partition in seen:
        problems.append(f"{where}.partition: duplicate partition {topic}:{p.partition}")
    replicas = set(p.replicas)
    if len(replicas) != len(p.replicas):
        problems.append(f"{where}.replicas: a broker appears twice in {list(p.replicas)}")
    if not replicas <= broker_ids:
        problems.append(f"{where}.replicas: unknown brokers {sorted(replicas - broker_ids)}")
    if not set(p.isr) <= replicas:
        problems.append(f"{where}.isr: {list(p.isr)} is not a subset of the replicas")
    if p.leader is not None and p.leader not in replicas:
        problems.append(f"{where}.leader: {p.leader} is not one of the replicas")
    return problems


def _check_groups(snap: Snapshot, broker_ids: set[int]) -> list[str]:
    problems: list[str] = []
    owner: dict[int, str] = {}
    domain_names: set[str] = set()
    for di, d in enumerate(snap.failure_domains):
        if d.name in domain_names:
            problems.append(f"failure_domains.{di}.name: duplicate domain {d.name!r}")
        domain_names.add(d.name)
        for b in d.brokers:
            if b not in broker_ids:
                problems.append(f"failure_domains.{di}.brokers: unknown broker {b}")
            elif b in owner and owner[b] != d.name:
                problems.append(
                    f"failure_domains.{di}.brokers: broker {b} is already in domain {owner[b]!r}"
                )
            owner[b] = d.name
    # Brokers outside explicit domains are in the domain named after their rack.
    kind = snap.policy.placement
    domain_names |= {location_of(b.rack, kind).rack for b in snap.brokers if b.id not in owner}
    for mi, name in enumerate(snap.maintenance_domains):
        if name not in domain_names:
            problems.append(f"maintenance_domains.{mi}: unknown failure domain {name!r}")
    groups: set[str] = set()
    for gi, g in enumerate(snap.broker_groups):
        if g.name in groups:
            problems.append(f"broker_groups.{gi}.name: duplicate group {g.name!r}")
        groups.add(g.name)
        unknown = sorted(set(g.brokers) - broker_ids)
        if unknown:
            problems.append(f"broker_groups.{gi}.brokers: unknown brokers {unknown}")
    bound: set[str] = set()
    for ii, ig in enumerate(snap.isolation_groups):
        for field, group in (("primary", ig.primary), ("secondary", ig.secondary)):
            if group is not None and group not in groups:
                problems.append(f"isolation_groups.{ii}.{field}: unknown broker group {group!r}")
        for t in ig.topics:
            if t in bound:
                problems.append(f"isolation_groups.{ii}.topics: {t!r} is in two isolation groups")
            bound.add(t)
    grouped: set[str] = set()
    for ai, ag in enumerate(snap.anti_affinity_groups):
        for t in ag.topics:
            if t in grouped:
                problems.append(
                    f"anti_affinity_groups.{ai}.topics: {t!r} is in two anti-affinity groups"
                )
            grouped.add(t)
    return problems


def snapshot_json_schema() -> dict[str, Any]:
    """The JSON Schema of the snapshot, generated from the model (configs/snapshot.schema.json)."""
    schema = Snapshot.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "kmedic cluster snapshot"
    return schema


def main() -> None:
    """``python -m manager.model.snapshot_file`` prints the schema (to regenerate the file in
    configs/)."""
    json.dump(snapshot_json_schema(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
