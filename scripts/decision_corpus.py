"""The decision corpus: saved snapshots and the decisions kmedic made on them, byte for byte.

``tests/unit/data/decisions.jsonl.gz`` holds one JSON object per line: ``name``, ``snapshot``
(the snapshot file format), and what ``kmedic plan`` printed for it (``json`` with ``--json``,
``text`` without) with the decision fields the JSON leaves out (``placement_violations``,
``request``, ``request_done``). The snapshots are the examples in configs/examples and every
distinct snapshot the planner's unit tests decided on (1,885, property tests included) when
the planner took its goal shape; tests/unit/test_decision_corpus.py checks every one.

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
    return expected_fields(decide(snap))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true", help="rewrite the expected decisions")
    parser.add_argument(
        "--add", nargs="+", metavar="NAME=SNAPSHOT", help="add snapshot files under new names"
    )
    args = parser.parse_args(argv)
    rows = list(entries())
    if args.add:
        return _add(rows, args.add)
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
        entry = {"name": name, "snapshot": json.loads(Path(path).read_text())}
        added.append({**entry, **decided(entry)})
        known.add(name)
    with gzip.open(CORPUS, "wt", encoding="utf-8") as out:
        for row in [*rows, *added]:
            out.write(json.dumps(row, sort_keys=True) + "\n")
    print(f"added {len(added)} decisions ({len(rows) + len(added)} in all)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
