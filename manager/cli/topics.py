"""`kmedic topics check`: the topics no heal can save, read from the live cluster
(manager/analyzer/topic_safety.py has the rules; the manager exports the same finding as
``kmedic_unsafe_topic`` every cycle). Exits 0 when every topic is safe, 3 when some are not.

`kmedic topics set-rf TOPIC --rf N`: an operator request (ZooKeeper, like `kmedic drain`) for
the leading manager to raise the topic's replication factor through its planner, gates,
budgets, executor and audit log (manager/analyzer/replication_factor.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from kmedic.errors import KmedicError
from kmedic.exits import Exit
from kmedic.kafka_admin import (
    REACH_MS,
    connect_admin,
    describe_min_insync,
    describe_partitions,
)
from kmedic.kafka_client import Cluster
from kmedic.own_topics import OwnTopics
from manager.analyzer.topic_safety import TopicFacts, find_unsafe
from manager.cli.kafka_args import add_kafka_args, kafka_from
from manager.cli.request_check import add_check
from manager.cli.requests import add_wait, submit_request
from manager.cli.zk_args import common_parser
from manager.config import TopicNames
from manager.model.policy import Policy

UNSAFE_EXIT = Exit.NOT_DONE


def register(subparsers: Any) -> None:
    topics = subparsers.add_parser("topics", help="topics a broker loss would hurt")
    sub = topics.add_subparsers(dest="verb", required=True)
    check = sub.add_parser("check", help="list unsafe topics (exit 3 when there are any)")
    add_kafka_args(check, "a manager config: its kafka: section and policy.min_replication_factor")
    check.add_argument(
        "--min-rf",
        type=int,
        default=None,
        help="the smallest safe replication factor (default: the config's, else "
        f"{Policy().min_replication_factor})",
    )
    check.add_argument("--json", action="store_true", help="print JSON instead of text")
    check.set_defaults(func=run_check)
    text = "raise a topic's replication factor, placed as a heal places (never lowers it)"
    set_rf = sub.add_parser("set-rf", parents=[common_parser()], help=text, description=text)
    set_rf.add_argument("topic", metavar="TOPIC")
    set_rf.add_argument("--rf", type=factor, required=True, help="the replication factor wanted")
    add_wait(set_rf)
    add_check(set_rf)
    set_rf.set_defaults(func=submit_request, kind="set_rf", brokers=[])


def factor(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a replication factor is an integer; {text!r} is not"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"a replication factor is at least 1; {value} is not")
    return value


def run_check(args: argparse.Namespace) -> int:
    cluster, cfg = kafka_from(args)
    min_rf = (cfg.policy if cfg else Policy()).min_replication_factor
    if args.min_rf is not None:
        if args.min_rf < 1:
            raise KmedicError(f"--min-rf {args.min_rf}: a replication factor is at least 1")
        min_rf = args.min_rf
    own = (cfg.topics if cfg else TopicNames()).own()
    facts = read_facts(cluster)
    unsafe = find_unsafe(facts, min_rf, own)
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "topic": u.topic,
                        "kind": u.kind,
                        "replication_factor": u.replication_factor,
                        "min_insync_replicas": u.min_insync_replicas,
                        "why": u.sentence(min_rf),
                    }
                    for u in unsafe
                ],
                indent=2,
            )
        )
    elif not unsafe:
        print(f"every topic is safe (RF at least {min_rf}, min.insync.replicas below the RF)")
        _say_own(facts, own)
    else:
        for u in unsafe:
            print(u.sentence(min_rf))
        _say_own(facts, own)
    return UNSAFE_EXIT if unsafe else 0


def _say_own(facts: list[TopicFacts], own: OwnTopics) -> None:
    """kmedic's own topics at min.insync.replicas 1 as kmedic creates them: named, and why
    the check does not call them unsafe."""
    kept = [
        t.name for t in facts if t.min_insync_replicas == 1 == own(t.name, t.replication_factor)
    ]
    if kept:
        print(
            f"kmedic's own, min.insync.replicas 1 as kmedic creates them: {', '.join(kept)} "
            "(written through the losses kmedic heals; docs/alerts.md)"
        )


def read_facts(cluster: Cluster) -> list[TopicFacts]:
    client = connect_admin(
        cluster, client_id="kmedic-topics-check", timeout_ms=15_000, reach_ms=REACH_MS
    )
    try:
        partitions = describe_partitions(client)
        rf: dict[str, int] = {}
        for p in partitions:
            rf[p.topic] = min(rf.get(p.topic, len(p.replicas)), len(p.replicas))
        min_insync = describe_min_insync(client, sorted(rf)) if rf else {}
    except KmedicError:
        raise
    except Exception as exc:  # kafka-python raises several unrelated types
        raise KmedicError(f"cannot read the topics: {exc!r}") from exc
    finally:
        client.close()
    return [TopicFacts(t, n, min_insync.get(t)) for t, n in sorted(rf.items())]
