"""The decision corpus: saved snapshots and the decisions kmedic made on them, byte for byte.

``tests/unit/data/decisions.jsonl.gz`` holds one JSON object per line: ``name``, ``snapshot``
(the snapshot file format), and what ``kmedic plan`` printed for it (``json`` with ``--json``,
``text`` without) with the decision fields the JSON leaves out (``placement_violations``,
``request``, ``request_done``). The snapshots are the examples in configs/examples and every
distinct snapshot the planner's unit tests decided on (1,885, property tests included) when
the planner took its goal shape; then (``tests-*``) every new one the unit tests decided on
with a request, a slow broker, latency, a switched-off goal, a quorum, min.insync.replicas or
eligible leaders; tests/unit/test_decision_corpus.py checks every one.

An entry may carry a ``situation`` (``manager.analyzer.situation.Situation``: ``mode``,
``audit_on_failover``, ``coordination_reliable``, ``running``, ``queued``): its decision is
then ``decide``'s on the snapshot in that situation, as the leader makes it (observe mode, degraded
mode, a plan of its own still running). ``--situations`` adds, for a sample of the entries
that act, one entry per situation.

A change meant to change decisions re-records the expected side and shows the difference in
its commit: ``python scripts/decision_corpus.py --record``. Without ``--record`` the script
reports how many decisions differ (exit 1 if any). ``--add NAME=SNAPSHOT.json ...`` adds
snapshots under new names, with the decisions made on them now (every other entry as it is).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from manager.analyzer.planner import decide
from manager.analyzer.situation import Situation
from manager.model.decision import Decision
from manager.model.snapshot_file import parse_snapshot

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "unit" / "data" / "decisions.jsonl.gz"


def entries(path: Path = CORPUS) -> Iterator[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)


def expected_fields(decision: Decision) -> dict[str, Any]:
    """What the corpus keeps of a decision."""
    return {
        "json": json.dumps(decision.to_dict(), indent=2),
        "text": decision.render_text(),
        "placement_violations": decision.placement_violations,
        "request": decision.request,
        "request_done": decision.request_done,
    }


def decided(entry: dict[str, Any]) -> dict[str, Any]:
    snap = parse_snapshot(json.dumps(entry["snapshot"]), source=entry["name"])
    situation = Situation(**entry["situation"]) if "situation" in entry else None
    return expected_fields(decide(snap, situation))


# The daemon's situations --situations adds, each on every 10th entry that acts.
SITUATIONS: dict[str, dict[str, Any]] = {
    "observe": {"mode": "observe"},
    "audit-failover": {"audit_on_failover": True},
    "zk-unreliable": {"coordination_reliable": False},
    "plan-running": {"running": 3, "queued": 2},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="rewrite the expected decisions")
    parser.add_argument(
        "--add", nargs="+", metavar="NAME=SNAPSHOT", help="add snapshot files under new names"
    )
    parser.add_argument(
        "--add-lines",
        metavar="PREFIX=FILE",
        help="add each line of FILE (one snapshot JSON per line) as PREFIX-0000, ...",
    )
    parser.add_argument(
        "--situations", action="store_true", help="add the daemon's situations (SITUATIONS)"
    )
    args = parser.parse_args(argv)
    rows = list(entries())
    if args.add:
        return _add(rows, args.add)
    if args.add_lines:
        prefix, _, path = args.add_lines.partition("=")
        lines = [line for line in Path(path).read_text().splitlines() if line.strip()]
        new = [
            {"name": f"{prefix}-{i:04d}", "snapshot": json.loads(line)}
            for i, line in enumerate(lines)
        ]
        return _write(rows, new)
    if args.situations:
        acting = [
            r for r in rows if json.loads(r["json"])["outcome"] == "act" and "situation" not in r
        ]
        new = [
            {"name": f"{name}:{row['name']}", "snapshot": row["snapshot"], "situation": situation}
            for name, situation in SITUATIONS.items()
            for row in acting[::10]
        ]
        return _write(rows, new)
    changed = [row["name"] for row in rows if decided(row) != {k: row[k] for k in decided(row)}]
    if args.record:
        with gzip.open(CORPUS, "wt", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps({**row, **decided(row)}, sort_keys=True) + "\n")
        print(f"recorded {len(rows)} decisions ({len(changed)} changed)")
        return 0
    shown = f": {changed[:10]}" if changed else ""
    print(f"{len(rows)} decisions, {len(changed)} differ{shown}")
    return 1 if changed else 0


def _add(rows: list[dict[str, Any]], named: list[str]) -> int:
    known = {row["name"] for row in rows}
    added = []
    for item in named:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            print(f"--add takes NAME=SNAPSHOT.json, not {item!r}", file=sys.stderr)
            return 2
        if name in known:
            print(f"the corpus already holds {name!r}", file=sys.stderr)
            return 2
        added.append({"name": name, "snapshot": json.loads(Path(path).read_text())})
        known.add(name)
    return _write(rows, added)


def _write(rows: list[dict[str, Any]], new: list[dict[str, Any]]) -> int:
    """The corpus with ``new`` entries added, each with the decision made on it now."""
    known = {row["name"] for row in rows}
    clash = [entry["name"] for entry in new if entry["name"] in known]
    if clash:
        print(f"the corpus already holds {clash[:5]}", file=sys.stderr)
        return 2
    added = [{**entry, **decided(entry)} for entry in new]
    with gzip.open(CORPUS, "wt", encoding="utf-8") as out:
        for row in [*rows, *added]:
            out.write(json.dumps(row, sort_keys=True) + "\n")
    print(f"added {len(added)} decisions ({len(rows) + len(added)} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
