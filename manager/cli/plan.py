"""``kmedic plan --snapshot FILE [--json]``: a dry run of the planner on a saved snapshot.

Exit codes: 0 act, noop or wait, 2 refuse, 1 bad input (the message names the field).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from manager.analyzer.planner import decide
from manager.daemon.gc_pause import collector_paused
from manager.model.snapshot_file import load_snapshot


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="dry run: what kmedic would do with a saved cluster snapshot",
        description=(
            "Read a JSON cluster snapshot and print the decision: act (with ordered actions), "
            "noop or refuse (with reasons), predicted broker loads and bytes to move. "
            "Exit 0 for act/noop, 2 for refuse, 1 for bad input."
        ),
    )
    parser.add_argument("--snapshot", required=True, metavar="FILE", help="snapshot JSON file")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    snapshot = load_snapshot(args.snapshot)
    with collector_paused():  # as the daemon decides
        decision = decide(snapshot)
    text = json.dumps(decision.to_dict(), indent=2) if args.json else decision.render_text()
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours; keep Python quiet at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return decision.exit_code
