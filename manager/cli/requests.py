"""`kmedic drain|fill|demote BROKER...`, `kmedic topics set-rf` (manager/cli/topics.py) and
`kmedic requests list|cancel`: operator requests
stored in ZooKeeper for the leading manager to carry out (manager/coordination/request_store.py
has the rules). Every command only writes or reads the request znodes: nothing here talks to
Kafka, and nothing moves until a leading manager plans it through its gates."""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import sys
import time
from typing import Any

from kmedic.errors import KmedicError
from kmedic.exits import Exit
from manager.analyzer.request_check import Asked
from manager.cli.request_check import add_check, check_at_once
from manager.cli.status import plan_line
from manager.cli.zk_args import common_parser, zk_target
from manager.coordination.request_store import StoredRequest, cancel, read_requests, submit
from manager.coordination.session import zk_session
from manager.coordination.state import read_state
from manager.coordination.state_view import plan_json
from manager.coordination.znodes import manager_path, require_cluster
from manager.model.snapshot import RequestKind

HELP: dict[RequestKind, str] = {
    "drain": "move every replica off these brokers (decommission)",
    "fill": "move load onto these (new) brokers until the cluster is even",
    "demote": "move leadership off these brokers (before a restart); no data moves",
    "decommission": "drain these brokers, then, once you have stopped them, unregister them "
    "from the cluster",
}


def broker_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a broker id is an integer; {text!r} is not") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a broker id is not negative; {value} is")
    return value


def register(sub: Any) -> None:
    common = common_parser()
    for kind, text in HELP.items():
        p = sub.add_parser(kind, parents=[common], help=text, description=text)
        p.add_argument("brokers", nargs="+", type=broker_id, metavar="BROKER")
        add_wait(p)
        add_check(p)
        p.set_defaults(func=submit_request, kind=kind, topic=None, rf=None)
    p = sub.add_parser("requests", help="list or cancel operator requests")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    listing = verbs.add_parser("list", parents=[common], help="every request and its state")
    listing.set_defaults(func=_list)
    stop = verbs.add_parser(
        "cancel", parents=[common], help="cancel a request; moves in flight finish"
    )
    stop.add_argument("id", help="the request id, e.g. req-0000000003")
    stop.set_defaults(func=_cancel)


def add_wait(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="wait up to this long for the request to be over: exit 0 done, 4 partly done, "
        "3 failed, cancelled or not over in time",
    )


def submit_request(args: argparse.Namespace) -> int:
    """Store the request ``args`` describes (kind, brokers, topic, rf); with ``--wait``, follow
    it until it is over."""
    target = zk_target(args)
    base = manager_path(target.root, target.cluster)
    by = f"{getpass.getuser()}@{socket.gethostname()}"
    asked = Asked(args.kind, tuple(args.brokers), topic=args.topic, replication_factor=args.rf)
    with zk_session(target.zk_connect, auth=target.auth) as client:
        # A typo'd cluster stored a request no manager would ever read.
        require_cluster(client, target.root, target.cluster)
        check_at_once(target.kafka or args.bootstrap, asked, target.policy)
        request = submit(
            client, base, args.kind, args.brokers, by, topic=args.topic, replication_factor=args.rf
        )
        _show(args, [request])
        if args.wait is None:
            return 0
        deadline = time.monotonic() + args.wait
        seen = request.state
        while time.monotonic() < deadline:
            time.sleep(2)
            now = {r.id: r for r in read_requests(client, base)}.get(request.id)
            if now is None:
                raise KmedicError(f"request {request.id} disappeared from ZooKeeper")
            if now.state != seen:
                seen = now.state
                _show(args, [now])
            if not now.open:
                return ENDED_EXITS.get(now.state, Exit.NOT_DONE)
    # Not done within --wait is an answer, "no", not a failure: 3, as the help says.
    print(f"kmedic: request {request.id} is still {seen} after {args.wait:.0f}s", file=sys.stderr)
    return Exit.NOT_DONE


# How a request that ended within --wait exits: done 0, partly done 4, failed or cancelled 3.
ENDED_EXITS = {"done": Exit.OK, "partial": Exit.PARTIAL}


def _list(args: argparse.Namespace) -> int:
    """Every request; a running one with where the in-flight plan carrying it out stands."""
    target = zk_target(args)
    with zk_session(target.zk_connect, auth=target.auth) as client:
        require_cluster(client, target.root, target.cluster)
        requests = list(read_requests(client, manager_path(target.root, target.cluster)))
        try:
            plan, unread = read_state(client, target.cluster, target.root).plan, None
        except KmedicError as exc:  # the requests are still worth listing
            plan, unread = None, str(exc)
    shown = plan_json(plan)
    if args.json:
        for r in requests:
            running = r.state == "running" and shown is not None
            print(
                json.dumps({**r.document(), **({"plan": shown} if running else {})}, sort_keys=True)
            )
        return 0
    _show(args, requests)
    if unread is not None:
        print(f"in-flight plan: unreadable: {unread}")
    elif shown is not None:
        print(f"in-flight plan: {plan_line(plan, time.time())}")
    return 0


def _cancel(args: argparse.Namespace) -> int:
    target = zk_target(args)
    with zk_session(target.zk_connect, auth=target.auth) as client:
        require_cluster(client, target.root, target.cluster)
        _show(args, [cancel(client, manager_path(target.root, target.cluster), args.id)])
    return 0


def _show(args: argparse.Namespace, requests: list[StoredRequest]) -> None:
    if args.json:
        for r in requests:
            print(json.dumps(r.document(), sort_keys=True))
        return
    if not requests:
        print("no requests")
    for r in requests:
        print(r.sentence())
