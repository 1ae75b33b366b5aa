"""`kmedic readiness`: would kmedic heal the loss of each broker, and of each rack, today?
From a saved snapshot (``--snapshot FILE``, no cluster needed) or the live cluster
(``--config``, as `kmedic snapshot` reads it); manager/analyzer/readiness.py decides.
Exits 3 when a loss is at risk (kmedic could not heal it: no placement, no live replica), 0
when every loss is healable or left to an operator by policy (more dead at once than
max_dead_brokers, maintenance, a budget), 1 on bad input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kmedic.errors import KmedicError
from kmedic.exits import Exit
from kmedic.gc_pause import collector_paused, kept_frozen
from manager.analyzer.heal_time import Pace
from manager.analyzer.readiness import Verdict, sweep
from manager.analyzer.replication_check import replication_settings_off
from manager.config import ReadinessSettings
from manager.daemon.readiness_sweep import pace_of
from manager.executor.config import ExecutorConfig
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import load_snapshot

NOT_READY_EXIT = Exit.NOT_DONE


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "readiness",
        help="would kmedic heal the loss of each broker and each rack? (exit 3: one at risk)",
        description="Would kmedic heal the loss of each broker, and of each rack, today? From "
        "a saved snapshot (--snapshot FILE, no cluster needed) or the live cluster (--config, "
        "as kmedic snapshot reads it). Exits 3 when a loss is at risk (kmedic could not heal "
        "it: no placement, no live replica), 0 when every loss is healable or left to an "
        "operator by policy (more dead at once than max_dead_brokers, maintenance, a "
        "budget), 1 on bad input.",
    )
    p.add_argument("--snapshot", metavar="FILE", help="a saved snapshot (kmedic snapshot)")
    p.add_argument("--config", type=Path, help="the manager's YAML: read the live cluster")
    p.add_argument(
        "--feeds-wait",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="live: how long to let the stats and load feeds catch up (default 20)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if bool(args.snapshot) == bool(args.config):
        raise KmedicError("give one of --snapshot FILE and --config MANAGER.yaml")
    if args.snapshot:
        # No manager here: the executor's default limits and the assumed copy rate.
        pace = pace_of(ExecutorConfig(), ReadinessSettings(), None)
        with kept_frozen(lambda: load_snapshot(args.snapshot)) as snap:
            verdicts = _sweep(snap, pace)
    else:
        from manager.cli.daemon import take_snapshot
        from manager.config import load_manager_config

        cfg = load_manager_config(args.config)
        snap = take_snapshot(cfg, args.feeds_wait)
        verdicts = _sweep(snap, pace_of(cfg.executor, cfg.readiness, None))
    if args.json:
        print(json.dumps([v.to_dict() for v in verdicts], indent=2))
    else:
        for v in verdicts:
            print(v.sentence())
            for reason in v.why[1:]:
                print(f"    {reason.message}")
        for off in replication_settings_off(snap):  # a heal's copy is gentle only with them
            print(off.sentence())
    return NOT_READY_EXIT if any(v.at_risk for v in verdicts) else 0


def _sweep(snap: Snapshot, pace: Pace) -> list[Verdict]:
    with collector_paused():  # as the daemon decides
        return sweep(snap, pace)
