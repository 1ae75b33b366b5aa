"""`kmedic actions tail`: the audit topic for on-call, one readable line per record."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kmedic.errors import KmedicError
from kmedic.kafka_preflight import check_credentials
from manager.audit.epoch_order import Lateness, in_epoch_order
from manager.audit.kafka_reader import read_records
from manager.audit.kafka_sink import DEFAULT_TOPIC
from manager.audit.since import parse_since
from manager.cli.kafka_args import add_kafka_args, kafka_from
from manager.cli.tail_fold import KEEP, MoveFold, RepeatFold


def register(subparsers: Any) -> None:
    actions = subparsers.add_parser("actions", help="read the audit log")
    sub = actions.add_subparsers(dest="verb", required=True)
    tail = sub.add_parser("tail", help="print audit records, oldest first, one per line")
    add_kafka_args(
        tail, "a manager config: read its kafka: section (security included) and audit topic"
    )
    tail.add_argument("--topic", help=f"default: the config's, or {DEFAULT_TOPIC}")
    tail.add_argument("--follow", "-f", action="store_true", help="keep printing new records")
    tail.add_argument("--since", help="only records from then on: 15m, 2h, 1d or an ISO time")
    tail.add_argument(
        "--cluster",
        help="only records about this Kafka cluster (kmedic's name for it, as everywhere)",
    )
    tail.add_argument("--json", action="store_true", help="one JSON record per line (all)")
    tail.add_argument(
        "--all",
        action="store_true",
        help=f"every record (by default a plan's first {KEEP} move starts and ends are printed "
        "and the rest counted, and a decision repeated unchanged cycle after cycle is printed "
        "once and counted)",
    )
    tail.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="each reason's whole sentence (by default its code where it has one)",
    )
    tail.set_defaults(func=run_tail)


def _say(sentence: str) -> None:
    print(f"kmedic: {sentence}", file=sys.stderr, flush=True)


def run_tail(args: argparse.Namespace) -> int:
    cluster, cfg = kafka_from(args)
    if cfg is not None:  # the audit topic is with kmedic's own topics
        cluster = cfg.own_topics_client
    topic = args.topic or (cfg.topics.actions if cfg else DEFAULT_TOPIC)
    since = None if args.since is None else parse_since(args.since, int(time.time() * 1000))
    check_credentials(cluster, role="actions tail")
    read = read_records(cluster, topic, since_ms=since, follow=args.follow, notice=_say)
    # Read to its end, the listing is put in epoch order; a follower says when a record of an
    # older epoch arrives after a newer one's (manager.audit.epoch_order).
    records = read if args.follow else iter(in_epoch_order(read))
    lateness = Lateness()
    fold = MoveFold(keep=10**18 if args.all else KEEP, compact=not args.verbose)
    repeats = RepeatFold()
    others: set[str] = set()  # clusters the records were about, when none is the one asked
    matched = False
    for record in records:
        if args.cluster and record.cluster != args.cluster:
            others.add(record.cluster)
            continue
        matched = True
        newer = lateness.after(record)
        if newer is not None:
            _say(
                f"the next record is epoch {record.epoch}'s, arriving after epoch {newer}'s: it "
                f"was written before epoch {newer} began (a request delayed on its way)"
            )
        if args.json:
            lines = [record.model_dump_json()]
        elif args.all:
            lines = fold.lines(record)
        else:
            lines = repeats.lines(record, fold.lines)
        for line in lines:
            print(line, flush=True)
    for line in [*fold.finish(), *repeats.finish()]:
        print(line)
    sys.stdout.flush()
    if args.cluster and not matched and others:
        # A typo (`--cluster deom`) printed nothing and exited 0, as a quiet cluster does.
        raise KmedicError(
            f"no record of cluster {args.cluster!r} in {topic}"
            f"{' since ' + args.since if args.since else ''}; its records are about: "
            f"{', '.join(sorted(others))}"
        )
    return 0
