"""`kmedic recover`: the last resort for an offline partition (no leader, and no in-sync or
eligible replica alive), with the loss counted before it is taken.

Without ``--way`` it is a dry run: for each offline partition, the ways out ranked - wait for a
replica that holds every committed record, elect an out-of-sync replica (the most it loses, in
records and seconds of writes, and how old the evidence is), recreate it (everything) - from
the live cluster as the manager would read it (``--config``) or a saved snapshot
(``--snapshot``). With ``--partition``, ``--way`` and ``--accept-loss`` typed back, it takes an
unclean election, refusing when the bound has grown past the loss accepted since; the intent is
audited before the act, the outcome after it, with the estimate and the measured log end.
kmedic never takes such a step on its own, in any mode (manager/analyzer/recovery.py).
"""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kmedic.errors import KmedicError, UsageError

if TYPE_CHECKING:  # imported when run: building the command parser loads no Kafka client
    from manager.analyzer.recovery import Way
    from manager.config import ManagerConfig
    from manager.model.last_logs import OfflinePartition
    from manager.model.snapshot import Snapshot


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "recover",
        help="the ways out of an offline partition, each with what it loses; take one "
        "only when told (an unclean election)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    p.add_argument("--config", type=Path, help="the manager's YAML: read the live cluster")
    p.add_argument("--snapshot", metavar="FILE", help="a saved snapshot (dry run only)")
    p.add_argument("--partition", metavar="TOPIC:N", help="the offline partition to act on")
    p.add_argument("--way", metavar="WAY", help="the way out, as the dry run names it: elect:B")
    p.add_argument(
        "--accept-loss",
        metavar="N|all",
        help="the most records you accept to lose (the dry run's bound, typed back); all: "
        "any, for a way with no bound",
    )
    p.add_argument(
        "--feeds-wait",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="live: how long to let the stats feed catch up (default 20)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if bool(args.snapshot) == bool(args.config):
        raise UsageError("kmedic recover: give one of --snapshot FILE and --config MANAGER.yaml")
    acting = [args.partition, args.way, args.accept_loss]
    if any(acting) and not all(acting):
        raise UsageError(
            "kmedic recover: to act give --partition, --way and --accept-loss together "
            "(without them it is a dry run)"
        )
    if all(acting) and args.snapshot:
        raise UsageError("kmedic recover: a saved snapshot is for a dry run; act with --config")
    from manager.analyzer.recovery import partition_ways

    accepted = _accepted(args.accept_loss) if args.accept_loss else None
    snap, cfg = _read(args)
    now_ms = int(time.time() * 1000)
    if not all(acting):
        table = {_key(o): partition_ways(snap, o, now_ms) for o in snap.offline_partitions}
        _print_ways(table, args.json)
        return 0
    assert cfg is not None
    return _act(args, cfg, snap, accepted, now_ms)


def _accepted(text: str) -> int | None:
    if text == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise UsageError(f"--accept-loss: {text!r} is not a number of records (or all)")
    return value


def _read(args: argparse.Namespace) -> tuple[Snapshot, ManagerConfig | None]:
    if args.snapshot:
        from manager.model.snapshot_file import load_snapshot

        return load_snapshot(args.snapshot), None
    from manager.cli.daemon import take_snapshot
    from manager.config import load_manager_config

    cfg = load_manager_config(args.config)
    return take_snapshot(cfg, args.feeds_wait), cfg


def _key(off: OfflinePartition) -> str:
    return f"{off.topic}:{off.partition}"


def _print_ways(table: dict[str, list[Way]], as_json: bool) -> None:
    if as_json:
        print(json.dumps({k: [w.to_dict() for w in ways] for k, ways in table.items()}, indent=2))
        return
    if not table:
        print("no offline partition: every partition has a leader, or one Kafka elects itself")
        return
    for key, ways in table.items():
        print(f"{key} is offline: no leader, and no in-sync or eligible replica alive")
        for n, way in enumerate(ways, start=1):
            print(f"  {n}. --way {way.name:<10} {way.sentence(key).split(': ', 1)[1]}")


def _act(
    args: argparse.Namespace,
    cfg: ManagerConfig,
    snap: Snapshot,
    accepted: int | None,
    now_ms: int,
) -> int:
    from manager.executor.last_resort import LastResort, take_last_resort

    by = f"{getpass.getuser()}@{socket.gethostname()}"
    audit = _Audit(cfg, snap, by)
    taken = take_last_resort(
        snap,
        str(args.partition),
        str(args.way),
        accepted,
        LastResort(cfg.cluster_client, stats_topic=cfg.topics.brokerstats),
        lambda summary, details: audit.write(summary, str(args.partition), details),
        by,
        now_ms,
    )
    print(json.dumps(taken.to_dict()) if args.json else taken.outcome)
    return 0


class _Audit:
    """The recovery's records, on the audit topic on-call reads, under the person's name and
    the fencing epoch current when the cluster was read (no manager's lease is taken)."""

    def __init__(self, cfg: ManagerConfig, snap: Snapshot, by: str) -> None:
        self._cfg, self._epoch, self._by = cfg, snap.leadership.current_epoch, by

    def write(self, summary: str, key: str, details: dict[str, Any]) -> None:
        from manager.audit.kafka_sink import KafkaAuditSink
        from manager.audit.log import AuditRecord

        cfg = self._cfg
        sink = KafkaAuditSink(
            "primary", cfg.own_topics_client, cfg.topics.actions, client_id="kmedic-recover"
        )
        record = AuditRecord(
            cluster=cfg.cluster,
            instance=f"kmedic-recover:{self._by}",
            epoch=self._epoch,
            kind="operator",
            summary=summary,
            partitions=(key,),
            details={"by": self._by, **details},
        )
        try:
            written = sink.send([record], cfg.audit.write_timeout_s)
        finally:
            sink.close()
        if written != 1:
            raise KmedicError(
                f"the audit topic {cfg.topics.actions} took no record within "
                f"{cfg.audit.write_timeout_s:.0f} s: nothing is done unaudited"
            )
