"""`kmedic manager --config FILE` (the daemon) and `kmedic snapshot` (save one snapshot)."""

from __future__ import annotations

import argparse
import signal
import time
from pathlib import Path
from typing import Any

from kmedic.errors import KmedicError
from kmedic.logging import get_logger
from manager.config import load_manager_config

log = get_logger(__name__)


def register(sub: Any) -> None:
    manager = sub.add_parser("manager", help="run the manager daemon (heal, balance, or refuse)")
    manager.add_argument("--config", type=Path, required=True, help="manager YAML config")
    manager.add_argument("--once", action="store_true", help="run a single cycle and exit")
    manager.set_defaults(func=cmd_manager)

    snap = sub.add_parser("snapshot", help="save the cluster snapshot the manager would decide on")
    snap.add_argument("--config", type=Path, required=True, help="manager YAML config")
    snap.add_argument("--out", type=Path, required=True, help="where to write the JSON snapshot")
    snap.add_argument(
        "--wait", type=float, default=20.0, help="seconds to let the stats/load feeds catch up"
    )
    snap.set_defaults(func=cmd_snapshot)


def cmd_manager(args: argparse.Namespace) -> int:
    from manager.daemon.manager import Manager

    cfg = load_manager_config(args.config)
    manager = Manager(cfg)
    signal.signal(signal.SIGTERM, lambda *_: manager.request_stop())
    manager.start()
    try:
        if args.once:
            manager.cycle()
        else:
            manager.run()
    except KeyboardInterrupt:
        pass
    finally:
        manager.stop()
        log.info("manager_stopped", instance=manager.instance)
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    from manager.coordination.leadership import Coordinator
    from manager.coordination.move_budget import from_plan, moves_in_window
    from manager.coordination.placement_store import ZkConfigStore
    from manager.coordination.plan_document import own_partitions
    from manager.model.snapshot import Leadership
    from manager.monitor.observe import build_snapshot
    from manager.monitor.sources import ClusterSources

    cfg = load_manager_config(args.config)
    sources = ClusterSources(
        cluster=cfg.cluster,
        bootstrap=cfg.bootstrap,
        stats_topic=cfg.topics.brokerstats,
        loads_topic=cfg.topics.replica_loads,
        stats_lookback_s=cfg.stats_lookback_s,
    ).start()
    try:
        deadline = time.monotonic() + args.wait
        while time.monotonic() < deadline and not all(s.caught_up for s in sources.feed_status()):
            time.sleep(0.5)
        with ZkConfigStore.connect(
            cfg.zookeeper.zk_connect, cfg.cluster, cfg.zookeeper.root
        ) as store:
            placement = store.load()
            coord = Coordinator(cfg.zookeeper, cfg.cluster, "kmedic-snapshot")
            coord.start()
            try:
                epoch = coord.current_epoch()
                stored = coord.plans.read()
            finally:
                coord.stop()
        own = own_partitions(stored.plan if stored else None)
        # A saved snapshot is for replay: it holds no leadership of its own.
        leadership = Leadership(
            holder="kmedic-snapshot", epoch=epoch, current_epoch=epoch, is_leader=True
        )
        obs = sources.observe(
            int(time.time() * 1000),
            placement=placement,
            leadership=leadership,
            own_moves=own,
            moves_last_hour=moves_in_window(from_plan(stored.plan), time.time()) if stored else 0,
        )
    finally:
        sources.stop()
    snap = build_snapshot(obs, cfg.policy, cfg.capacity)
    try:
        args.out.write_text(snap.model_dump_json(indent=1))
    except OSError as exc:
        raise KmedicError(f"cannot write {args.out}: {exc.strerror}") from exc
    print(
        f"snapshot of {cfg.cluster} written to {args.out}: {len(snap.brokers)} brokers, "
        f"{sum(len(t.partitions) for t in snap.topics)} partitions"
    )
    return 0
