"""``kmedic plan --snapshot FILE [--json]``: a dry run of the planner on a saved snapshot.

Exit codes: 0 act, noop or wait, 2 refuse, 1 bad input (the message names the field).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from kmedic.gc_pause import collector_paused, kept_frozen
from manager.analyzer.planner import decide
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import load_snapshot


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "plan",
        help="dry run: what kmedic would do with a saved cluster snapshot",
        description=(
            "Read a JSON cluster snapshot and print the decision: act (with ordered actions), "
            "noop or refuse (with reasons), predicted broker loads and bytes to move. "
            "Exit 0 for act, noop or wait, 3 for refuse, 4 for a partial heal, 1 for bad input."
        ),
    )
    parser.add_argument("--snapshot", required=True, metavar="FILE", help="snapshot JSON file")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Loaded with the collector paused and kept frozen: 1.3 M replicas in 2.1 s (docs/bench.md).
    with kept_frozen(lambda: load_snapshot(args.snapshot)) as snapshot:
        with collector_paused():  # as the daemon decides
            decision = decide(snapshot)
        if args.json:  # the decision alone, as the audit log and the decision corpus keep it
            text = json.dumps(decision.to_dict(), indent=2)
        else:
            text = decision.render_text() + "\n" + "\n".join(capacity_lines(snapshot))
    try:
        print(text, flush=True)
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: not an error of ours; keep Python quiet at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return decision.exit_code


def capacity_doc(snap: Snapshot) -> list[dict[str, object]]:
    """Each broker's capacity and where each figure came from (config, agent, log dirs)."""
    out: list[dict[str, object]] = []
    for b in snap.brokers:
        cap = b.capacity or snap.default_capacity
        source = b.capacity_source
        out.append(
            {
                "broker": b.id,
                "network_in_bytes_per_s": cap.network_in_bytes_per_s if cap else None,
                "network_out_bytes_per_s": cap.network_out_bytes_per_s if cap else None,
                "disk_bytes": cap.disk_bytes if cap else None,
                "source": source.model_dump() if source else None,
            }
        )
    return out


def capacity_lines(snap: Snapshot) -> list[str]:
    """'capacity: broker 1: network 125 MB/s (default), disk 1000 GB (log dirs)'."""
    lines = []
    for doc in capacity_doc(snap):
        source: Any = doc["source"] or {}
        net, disk = doc["network_in_bytes_per_s"], doc["disk_bytes"]
        where = {"log_dirs": "log dirs", "agent": f"agent: {source.get('interface')}"}
        net_from = where.get(source.get("network"), source.get("network", "not recorded"))
        disk_from = where.get(source.get("disk"), source.get("disk", "not recorded"))
        net_text = f"{float(net) / 1e6:.0f} MB/s" if isinstance(net, int | float) else "unknown"
        disk_text = f"{float(disk) / 1e9:.0f} GB" if isinstance(disk, int | float) else "unknown"
        lines.append(
            f"capacity: broker {doc['broker']}: network {net_text} ({net_from}), "
            f"disk {disk_text} ({disk_from})"
        )
    return lines
