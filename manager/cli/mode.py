"""`kmedic mode [act|observe|--clear]`: show, switch or clear the mode every manager
instance of a cluster runs in (manager/coordination/mode_store.py). ``observe``: decide, audit
``would_act`` with the full plan and alert as usual, but write nothing to the cluster - how an
operator adopts kmedic (docs/operations.md). ``--clear`` deletes the run-time mode: each
instance runs in its config's mode again. An instance started with ``--mode`` keeps that mode
whatever is set here. The leading manager picks a switch up at its next cycle and audits it."""

from __future__ import annotations

import argparse
import getpass
import json
import socket
from typing import Any

from kmedic.errors import UsageError
from manager.cli.status import CONFIG_MODE
from manager.cli.zk_args import common_parser, warn_if_unknown, zk_target
from manager.coordination.mode_store import clear_mode, read_mode, set_mode
from manager.coordination.session import zk_session
from manager.coordination.znodes import manager_path, require_cluster


def register(sub: Any) -> None:
    p = sub.add_parser(
        "mode",
        parents=[common_parser()],
        help="show or switch the managers' mode: act, or observe (write nothing)",
        description="Show or switch the mode every manager instance of a cluster runs in. "
        "observe: decide, audit would_act with the full plan and alert as usual, but write "
        "nothing to the cluster (how an operator adopts kmedic). The leading manager picks a "
        "switch up at its next cycle and audits it. Precedence: an instance's --mode flag, "
        "then the mode set here, then the config's mode.",
    )
    p.add_argument("mode", nargs="?", choices=("act", "observe"), help="the mode to switch to")
    p.add_argument(
        "--clear",
        action="store_true",
        help="delete the mode set at run time: each instance runs in its config's mode again",
    )
    p.add_argument("--why", default="", help="a note for the audit log")
    p.set_defaults(func=_mode)


def _mode(args: argparse.Namespace) -> int:
    if args.clear and args.mode is not None:
        raise UsageError(f"kmedic mode: give a mode ({args.mode}) or --clear, not both")
    target = zk_target(args)
    base = manager_path(target.root, target.cluster)
    with zk_session(target.zk_connect, auth=target.auth) as client:
        if args.clear:
            cleared = clear_mode(client, base)
            record = None
            if cleared is None:  # "nothing was set" on a typo'd cluster says why
                warn_if_unknown(client, target, "nothing was set")
        elif args.mode is None:
            require_cluster(client, target.root, target.cluster)
            record = read_mode(client, base)
        else:
            warn_if_unknown(client, target, "the mode is stored")
            by = f"{getpass.getuser()}@{socket.gethostname()}"
            record = set_mode(client, base, args.mode, by, args.why)
    if args.json:
        print(json.dumps(record.model_dump() if record else None, sort_keys=True))
    elif args.clear:
        was = f"cleared ({cleared.sentence()}); " if cleared else "nothing was set; "
        print(f"mode: {was}each manager runs in its config's mode (or its --mode flag)")
    elif record is None:
        print(f"mode: {CONFIG_MODE}")
    else:
        print(f"mode: {record.sentence()}")
    return 0
