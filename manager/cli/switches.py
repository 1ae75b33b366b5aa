"""`kmedic switches [GOAL=on|off|config ...]`: show or set the goal switches every manager
instance of a cluster judges by (manager/coordination/switch_store.py has the rules). A goal
switched off is still decided every cycle and audited as ``would_act``; nothing it plans is
carried out. ``config`` hands a goal back to the manager's config."""

from __future__ import annotations

import argparse
import getpass
import json
import socket
from typing import Any

from manager.cli.zk_args import common_parser, warn_if_unknown, zk_target
from manager.coordination.session import zk_session
from manager.coordination.switch_store import GOALS, SwitchRecord, read_switches, set_switches
from manager.coordination.znodes import manager_path, require_cluster

_VALUES: dict[str, bool | None] = {"on": True, "off": False, "config": None}


def setting(text: str) -> tuple[str, bool | None]:
    name, sep, value = text.partition("=")
    if not sep or value not in _VALUES:
        raise argparse.ArgumentTypeError(f"{text!r}: use GOAL=on, GOAL=off or GOAL=config")
    if name not in GOALS:
        raise argparse.ArgumentTypeError(f"{name!r} is not a goal (goals: {', '.join(GOALS)})")
    return name, _VALUES[value]


def register(sub: Any) -> None:
    text = (
        "show or set the goal switches at run time: GOAL=off keeps a goal from acting (it is "
        "still decided and audited as would_act), GOAL=config hands it back to the config"
    )
    p = sub.add_parser("switches", parents=[common_parser()], help=text, description=text)
    p.add_argument(
        "settings",
        nargs="*",
        default=[],  # none: show them
        type=setting,
        metavar="GOAL=on|off|config",
        help="switches to set",
    )
    p.add_argument("--why", default="", help="a note for the audit log")
    p.set_defaults(func=_switches)


def _switches(args: argparse.Namespace) -> int:
    target = zk_target(args)
    base = manager_path(target.root, target.cluster)
    with zk_session(target.zk_connect, auth=target.auth) as client:
        record: SwitchRecord | None
        if args.settings:
            warn_if_unknown(client, target, "the switches are stored")
            by = f"{getpass.getuser()}@{socket.gethostname()}"
            record = set_switches(client, base, dict(args.settings), by, args.why)
        else:
            require_cluster(client, target.root, target.cluster)
            record = read_switches(client, base)
    if args.json:
        print(json.dumps(record.model_dump() if record else None, sort_keys=True))
    elif record is None or not record.goals:
        print("switches: none set at run time; every goal as in each manager's config")
    else:
        print(f"switches: {record.sentence()}; the goals not named as in each manager's config")
    return 0
