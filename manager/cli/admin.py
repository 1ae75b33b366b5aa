"""`kmedic domains|groups|maintenance ...`: administration of the placement configuration that
the manager reads from ZooKeeper (see manager/coordination/placement_store.py for the rules and
the layout)."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from manager.cli.request_check import add_check, check_brokers
from manager.cli.zk_args import ZkTarget, common_parser, warn_if_unknown, zk_target
from manager.coordination.placement_store import ZkConfigStore
from manager.coordination.session import zk_session
from manager.coordination.znodes import require_cluster
from manager.model.placement_config import (
    AntiAffinityGroup,
    BrokerGroup,
    Domain,
    IsolationGroup,
    Kind,
    PlacementConfig,
    Record,
    parse_record,
)

GROUP_KINDS: dict[str, Kind] = {
    "broker": "broker-group",
    "isolation": "isolation-group",
    "anti-affinity": "anti-affinity-group",
}


def broker_list(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"broker ids are integers separated by commas; {part!r} is not one"
            ) from None
    return out


def name_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _crud(
    sub: Any, common: argparse.ArgumentParser, kind: Kind, add_fields: Callable[..., None]
) -> None:
    for verb in ("create", "update"):
        p = sub.add_parser(verb, parents=[common], help=f"{verb} a {kind}")
        p.add_argument("name")
        add_fields(p, required=verb == "create")
        p.set_defaults(func=_run, verb=verb, kind=kind)
    p = sub.add_parser("list", parents=[common], help=f"list every {kind}")
    p.set_defaults(func=_run, verb="list", kind=kind)
    for verb in ("get", "delete"):
        p = sub.add_parser(verb, parents=[common], help=f"{verb} one {kind}")
        p.add_argument("name")
        p.set_defaults(func=_run, verb=verb, kind=kind)


def _broker_fields(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument("--brokers", type=broker_list, required=required, help="e.g. 1,2,3")
    add_check(p, "the brokers are stored unchecked")


def _isolation_fields(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument("--topics", type=name_list, required=required, help="e.g. payments,orders")
    p.add_argument("--primary", required=required, help="broker group the topics live on")
    p.add_argument("--secondary", help="broker group used when the primary has no room")


def _topic_fields(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument("--topics", type=name_list, required=required, help="e.g. payments,orders")


def register(subparsers: Any) -> None:
    common = common_parser()
    domains = subparsers.add_parser("domains", help="failure domains (named sets of brokers)")
    _crud(domains.add_subparsers(dest="verb", required=True), common, "domain", _broker_fields)

    groups = subparsers.add_parser("groups", help="broker, isolation and anti-affinity groups")
    group_sub = groups.add_subparsers(dest="group_kind", required=True)
    fields = {"broker": _broker_fields, "isolation": _isolation_fields}
    for short, kind in GROUP_KINDS.items():
        g = group_sub.add_parser(short, help=f"{kind}s")
        _crud(
            g.add_subparsers(dest="verb", required=True),
            common,
            kind,
            fields.get(short, _topic_fields),
        )

    maint = subparsers.add_parser("maintenance", help="put failure domains in/out of maintenance")
    maint_sub = maint.add_subparsers(dest="verb", required=True)
    p = maint_sub.add_parser("start", parents=[common], help="put a domain in maintenance")
    p.add_argument("domain")
    p.add_argument("--reason", required=True, help="why (shown to on-call and in the audit log)")
    p.set_defaults(func=_maintenance, verb="start")
    p = maint_sub.add_parser("end", parents=[common], help="take a domain out of maintenance")
    p.add_argument("domain")
    p.set_defaults(func=_maintenance, verb="end")
    p = maint_sub.add_parser("list", parents=[common], help="domains in maintenance")
    p.set_defaults(func=_maintenance, verb="list")


@contextmanager
def _store(target: ZkTarget, *, creating: bool = False) -> Iterator[ZkConfigStore]:
    """The cluster's placement store. A cluster no manager has stored is a typo when read or
    changed (nothing is written under it: the store would create its tree); a record created
    for it is stored with a warning naming the known clusters - an operator sets failure
    domains and isolation groups up before a cluster's first manager starts, so that its first
    heal keeps them, as a mode may be set before it (`kmedic mode`)."""
    with zk_session(target.zk_connect, auth=target.auth) as client:
        if creating:
            warn_if_unknown(client, target, "the record is stored")
        else:
            require_cluster(client, target.root, target.cluster)
        yield ZkConfigStore(client, target.cluster, target.root)


def _record_from(args: argparse.Namespace, kind: Kind, base: Record | None) -> Record:
    fields: dict[str, Any] = base.model_dump() if base is not None else {}
    fields["name"] = args.name
    for key in ("brokers", "topics", "primary", "secondary"):
        value = getattr(args, key, None)
        if value is not None:
            fields[key] = value
    return parse_record(kind, fields, f"{kind} {args.name!r}")


def _run(args: argparse.Namespace) -> int:
    kind: Kind = args.kind
    target = zk_target(args)
    with _store(target, creating=args.verb == "create") as store:
        if args.verb == "list":
            items = store.load().items(kind)
            _print_items(args, [items[n] for n in sorted(items)])
        elif args.verb == "get":
            _print_items(args, [store.get(kind, args.name)])
        elif args.verb == "delete":
            store.delete(kind, args.name)
            print(f"deleted {kind} {args.name}")
        else:
            base = None if args.verb == "create" else store.get(kind, args.name)
            record = _record_from(args, kind, base)
            if getattr(args, "brokers", None) is not None:
                check_brokers(target.kafka or args.bootstrap, f"{kind} {args.name!r}", args.brokers)
            store.put(record, create=args.verb == "create")
            print(f"{args.verb}d {kind} {_describe(record)}")
    return 0


def _maintenance(args: argparse.Namespace) -> int:
    with _store(zk_target(args)) as store:
        if args.verb == "start":
            cfg = store.start_maintenance(args.domain, args.reason, int(time.time() * 1000))
            print(f"domain {args.domain} in maintenance: {cfg.maintenance[args.domain].reason}")
        elif args.verb == "end":
            store.end_maintenance(args.domain)
            print(f"domain {args.domain} out of maintenance")
        else:
            _print_maintenance(args, store.load())
    return 0


def _describe(record: Record) -> str:
    if isinstance(record, Domain | BrokerGroup):
        return f"{record.name}: brokers {','.join(map(str, record.brokers))}"
    if isinstance(record, IsolationGroup):
        second = f", secondary {record.secondary}" if record.secondary else ""
        return f"{record.name}: topics {','.join(record.topics)} on {record.primary}{second}"
    assert isinstance(record, AntiAffinityGroup)
    return f"{record.name}: topics {','.join(record.topics)}"


def _print_items(args: argparse.Namespace, records: list[Any]) -> None:
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
        return
    if not records:
        print("(none)")
    for record in records:
        print(_describe(record))


def _print_maintenance(args: argparse.Namespace, cfg: PlacementConfig) -> None:
    entries = [cfg.maintenance[d] for d in sorted(cfg.maintenance)]
    if args.json:
        print(json.dumps([e.model_dump(mode="json") for e in entries], indent=2))
        return
    if not entries:
        print("(no domain in maintenance)")
    for e in entries:
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(e.since_ms / 1000))
        print(f"{e.domain}: since {since}: {e.reason}")
