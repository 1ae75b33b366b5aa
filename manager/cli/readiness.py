"""`kmedic readiness`: would kmedic heal the loss of each broker, and of each rack, today?
From a saved snapshot (``--snapshot FILE``, no cluster needed) or the live cluster
(``--config``, as `kmedic snapshot` reads it); manager/analyzer/readiness.py decides.
Exits 0 when every scenario is healable, 3 when one is not, 1 on bad input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kmedic.errors import KmedicError
from manager.analyzer.readiness import Verdict, sweep
from manager.daemon.gc_pause import collector_paused
from manager.model.snapshot_file import load_snapshot

NOT_READY_EXIT = 3


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "readiness",
        help="would kmedic heal the loss of each broker and each rack? (exit 3: not all)",
        description=__doc__,
    )
    p.add_argument("--snapshot", metavar="FILE", help="a saved snapshot (kmedic snapshot)")
    p.add_argument("--config", type=Path, help="the manager's YAML: read the live cluster")
    p.add_argument(
        "--wait", type=float, default=20.0, help="live: seconds to let the stats feeds catch up"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if bool(args.snapshot) == bool(args.config):
        raise KmedicError("give one of --snapshot FILE and --config MANAGER.yaml")
    if args.snapshot:
        snap = load_snapshot(args.snapshot)
    else:
        from manager.cli.daemon import take_snapshot
        from manager.config import load_manager_config

        snap = take_snapshot(load_manager_config(args.config), args.wait)
    with collector_paused():  # as the daemon decides
        verdicts = sweep(snap)
    if args.json:
        print(json.dumps([_doc(v) for v in verdicts], indent=2))
    else:
        for v in verdicts:
            print(v.sentence())
            for reason in v.why[1:]:
                print(f"    {reason.message}")
    return 0 if all(v.healable for v in verdicts) else NOT_READY_EXIT


def _doc(v: Verdict) -> dict[str, Any]:
    return {
        "scenario": v.scenario.kind,
        "name": v.scenario.name,
        "brokers": list(v.scenario.brokers),
        "healable": v.healable,
        "outcome": v.outcome,
        "summary": v.summary,
        "why": [r.to_dict() for r in v.why],
        "bytes_to_copy": v.bytes_to_copy,
        "moves": v.moves,
        "busiest_after": (
            {"broker": v.busiest_after[0], "network_util": round(v.busiest_after[1], 3)}
            if v.busiest_after
            else None
        ),
    }
