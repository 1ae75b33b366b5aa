"""`kmedic actions tail`: the audit topic for on-call, one readable line per record."""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import UTC, datetime
from typing import Any

from kmedic.errors import KmedicError
from kmedic.kafka_preflight import check_credentials
from manager.audit.kafka_reader import read_records
from manager.audit.kafka_sink import DEFAULT_TOPIC
from manager.cli.kafka_args import add_kafka_args, kafka_from
from manager.cli.tail_fold import KEEP, MoveFold

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now_ms: int) -> int:
    """``15m``/``2h``/``1d`` ago, or an ISO 8601 time (UTC unless it says otherwise)."""
    match = _DURATION.match(text.strip())
    if match:
        return now_ms - int(match.group(1)) * _UNIT_S[match.group(2)] * 1000
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise KmedicError(
            f"--since {text!r}: use a duration like 15m, 2h, 1d or an ISO time like "
            "2026-01-31T12:00:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


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
        help=f"every move record (by default a plan's first {KEEP} starts and ends are printed, "
        "and the rest counted)",
    )
    tail.set_defaults(func=run_tail)


def _say(sentence: str) -> None:
    print(f"kmedic: {sentence}", file=sys.stderr, flush=True)


def run_tail(args: argparse.Namespace) -> int:
    cluster, cfg = kafka_from(args)
    topic = args.topic or (cfg.topics.actions if cfg else DEFAULT_TOPIC)
    since = None if args.since is None else parse_since(args.since, int(time.time() * 1000))
    check_credentials(cluster, role="actions tail")
    records = read_records(cluster, topic, since_ms=since, follow=args.follow, notice=_say)
    fold = MoveFold(keep=10**18 if args.all else KEEP)
    for record in records:
        if args.cluster and record.cluster != args.cluster:
            continue
        lines = [record.model_dump_json()] if args.json else fold.lines(record)
        for line in lines:
            print(line, flush=True)
    for line in fold.finish():
        print(line)
    sys.stdout.flush()
    return 0
