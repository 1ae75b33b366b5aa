"""`kmedic manager --config FILE` (the daemon) and `kmedic snapshot` (save one snapshot)."""

from __future__ import annotations

import argparse
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from kmedic.errors import KmedicError, Unreachable
from kmedic.kafka_client import client_settings
from kmedic.kafka_preflight import check_credentials, kafka_silence
from kmedic.logging import get_logger
from manager.config import ManagerConfig, load_manager_config
from manager.model.snapshot import Snapshot

# How long `manager --once` waits for ZooKeeper before it gives up (exit 5).
ONCE_REACH_S = 30.0
# Between the snapshot tool's two reads: longer than metadata takes to reach every broker.
CONFIRM_READ_GAP_S = 1.0

log = get_logger(__name__)


def register(sub: Any) -> None:
    manager = sub.add_parser("manager", help="run the manager daemon (heal, balance, or refuse)")
    manager.add_argument("--config", type=Path, required=True, help="manager YAML config")
    manager.add_argument(
        "--once",
        action="store_true",
        help="run a single cycle and exit (ZooKeeper not answering within 30 s: exit 5)",
    )
    manager.add_argument(
        "--mode",
        choices=("act", "observe"),
        default=None,
        help="this instance's mode, over a mode set at run time and the config's "
        "(observe: decide and audit, write nothing); without it `kmedic mode` switches "
        "every instance at run time, and `kmedic mode --clear` hands back to the config",
    )
    manager.set_defaults(func=cmd_manager)

    snap = sub.add_parser("snapshot", help="save the cluster snapshot the manager would decide on")
    snap.add_argument("--config", type=Path, required=True, help="manager YAML config")
    snap.add_argument("--out", type=Path, required=True, help="where to write the JSON snapshot")
    snap.add_argument(
        "--feeds-wait",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="how long to let the stats and load feeds catch up (default 20)",
    )
    snap.set_defaults(func=cmd_snapshot)


def cmd_manager(args: argparse.Namespace) -> int:
    from manager.daemon.wiring import build_manager

    cfg = load_manager_config(args.config)
    check_credentials(cfg.cluster_client, role="manager")
    if cfg.own_topics_client != cfg.cluster_client:
        check_credentials(cfg.own_topics_client, role="manager (own_topics_kafka)")
    if cfg.secondary_client is not None:
        check_credentials(cfg.secondary_client, role="manager (audit.secondary_kafka)")
    manager = build_manager(cfg, mode_flag=args.mode)
    signal.signal(signal.SIGTERM, lambda *_: manager.request_stop())
    # One cycle is a tool's run: it waits for ZooKeeper ONCE_REACH_S, not for as long as a
    # daemon does (it had not ended after 90 s with nothing reachable).
    bound = threading.Timer(ONCE_REACH_S, manager.request_stop) if args.once else None
    try:
        if bound is not None:
            bound.daemon = True
            bound.start()
        manager.start()
        if bound is not None:
            bound.cancel()
            if not manager.coordinator.connected:
                raise Unreachable(
                    f"ZooKeeper at {cfg.zookeeper.zk_connect} did not answer within "
                    f"{ONCE_REACH_S:.0f} s: no cycle ran"
                )
            manager.run_once()
        else:
            manager.run()
    except KeyboardInterrupt:
        pass
    finally:
        manager.stop()
        log.info("manager_stopped", instance=manager.instance)
    reason = manager.coordinator.shutdown_reason
    if reason is not None:  # it gave up on ZooKeeper: a supervisor must see a failure
        raise KmedicError(f"manager {manager.instance} stopped: {reason}")
    return 0


def cmd_snapshot(args: argparse.Namespace) -> int:
    cfg = load_manager_config(args.config)
    writable(args.out)  # before the cluster is read, not after
    snap = take_snapshot(cfg, args.feeds_wait)
    try:
        args.out.write_text(snap.model_dump_json(indent=1))
    except OSError as exc:
        raise KmedicError(f"cannot write {args.out}: {exc.strerror}") from exc
    print(
        f"snapshot of {cfg.cluster} written to {args.out}: {len(snap.brokers)} brokers, "
        f"{sum(len(t.partitions) for t in snap.topics)} partitions"
    )
    return 0


def writable(out: Path) -> None:
    """KmedicError naming ``out`` when a file cannot be written there: its directory missing,
    not a directory, or not writable; or ``out`` a directory itself."""
    parent = out.parent
    if out.is_dir():
        raise KmedicError(f"cannot write {out}: it is a directory")
    if not parent.is_dir():
        raise KmedicError(f"cannot write {out}: no directory {parent}")
    if not os.access(parent, os.W_OK):
        raise KmedicError(f"cannot write {out}: {parent} is not writable")


def and_kafka(cfg: ManagerConfig) -> str:
    """ "; nor did Kafka ..." when Kafka does not answer either: a command that gives up names
    every service it could not reach, not only the first one it tried."""
    why = kafka_silence(cfg.cluster_client)
    if why is None:
        return ""
    return f"; nor did Kafka at {client_settings(cfg.cluster_client).bootstrap} answer ({why})"


def take_snapshot(cfg: ManagerConfig, wait_s: float) -> Snapshot:
    """The snapshot the manager would decide on now. Reads ZooKeeper on a plain session: it
    joins no election and never moves the fencing epoch, whether or not a manager runs."""
    from manager.coordination.session import zk_session
    from manager.coordination.state import read_state
    from manager.daemon.observation import observe_cluster
    from manager.daemon.wiring import sources_for
    from manager.model.snapshot import Leadership

    sources = sources_for(cfg, feed_process=False).start()
    try:
        deadline = time.monotonic() + wait_s
        # ZooKeeper first, while the feeds start: a ZooKeeper that does not answer ends the
        # command within its session bound, naming Kafka too when the feeds found it silent.
        zk = cfg.zookeeper
        try:
            with zk_session(zk.zk_connect, zk.session_timeout_s, zk.auth) as client:
                state = read_state(client, cfg.cluster, zk.root)
        except Unreachable as exc:
            raise Unreachable(f"{exc}{and_kafka(cfg)}") from exc
        while time.monotonic() < deadline and not all(s.caught_up for s in sources.feed_status()):
            time.sleep(0.5)
        # A saved snapshot is for replay: it holds no leadership of its own.
        epoch = state.current_epoch
        leadership = Leadership(
            holder="kmedic-snapshot", epoch=epoch, current_epoch=epoch, is_leader=True
        )
        # Two reads: a failed log directory counts only when a second read confirms it
        # (manager.monitor.offline); the first read only primes that.
        observe_cluster(cfg, sources, state, leadership, time.time())
        time.sleep(CONFIRM_READ_GAP_S)
        snap = observe_cluster(cfg, sources, state, leadership, time.time())
    finally:
        sources.stop()
    return snap
