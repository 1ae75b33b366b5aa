"""`kmedic cluster up|down|status|kill|restart|exec`: the local real cluster from a shell.

The cluster outlives the command that started it; its state file in the work directory lets
any later command find it. The directory is ``--dir``, else $KMEDIC_CLUSTER_DIR, else
./var/cluster.

``up --nic-mbps N`` starts a network-bound cluster: inside a network namespace of its own,
each broker on its own loopback address with its link shaped to N Mbit/s each way. Only
processes inside that namespace reach it: ``exec -- COMMAND`` runs one there.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import yaml

from kmedic.errors import KmedicError
from kmedic.kafka_acls import ROLES
from kmedic.localcluster import ClusterSpec, LocalCluster
from kmedic.localcluster.configs import KAFKA_RELEASES
from kmedic.localcluster.security import role_user


def default_dir() -> Path:
    return Path(os.environ.get("KMEDIC_CLUSTER_DIR", "var/cluster"))


SLOWEST_LINK_MBPS = 10


def parse_link_mbps(text: str) -> int:
    """A shaped cluster's link speed (``--nic-mbps``), a whole number of Mbit/s, at least
    ``SLOWEST_LINK_MBPS``: the soak slows one link to a tenth of it, and below a megabit
    the cluster's own heartbeats queue behind a client's load."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of Mbit/s; {text!r} is not") from None
    if value < SLOWEST_LINK_MBPS:
        raise argparse.ArgumentTypeError(f"must be at least {SLOWEST_LINK_MBPS}; {value} is not")
    return value


def parse_racks(text: str) -> tuple[str, ...]:
    racks = tuple(r.strip() for r in text.split(",") if r.strip())
    if not racks:
        raise argparse.ArgumentTypeError("--racks needs at least one rack name")
    return racks


def register(sub: Any) -> None:
    parser = sub.add_parser("cluster", help="run a real local Kafka + ZooKeeper cluster")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (data, logs)")
    actions = parser.add_subparsers(dest="cluster_action", metavar="ACTION")
    actions.required = True
    # ``cluster status --dir X`` as well as ``cluster --dir X status``: the action's own
    # --dir leaves the group's value alone when it is not given.
    at_dir = argparse.ArgumentParser(add_help=False)
    at_dir.add_argument(
        "--dir", type=Path, default=argparse.SUPPRESS, help="work directory (data, logs)"
    )

    up = actions.add_parser(
        "up", parents=[at_dir], help="start ZooKeeper, KRaft controllers and N brokers"
    )
    up.add_argument(
        "--broker-count", type=int, default=4, metavar="N", help="number of brokers (default 4)"
    )
    up.add_argument(
        "--controllers",
        type=int,
        default=1,
        help="KRaft controllers, the metadata quorum's voters: 1 (default) or 3 to survive one "
        "loss; their ids are 100, 101, ...",
    )
    up.add_argument(
        "--racks",
        type=parse_racks,
        default=("/r1", "/r2"),
        help="comma-separated rack names, assigned round-robin (default /r1,/r2)",
    )
    up.add_argument(
        "--secure",
        action="store_true",
        help="SASL_SSL-only client listeners, a generated CA and SCRAM users (admin, kmedic)",
    )
    up.add_argument(
        "--nic-mbps",
        type=parse_link_mbps,
        default=None,
        metavar="N",
        help="a network-bound cluster: inside a network namespace of its own, every node on "
        "its own loopback address, each broker's link shaped to N Mbit/s each way (needs root)",
    )
    up.add_argument(
        "--kafka",
        choices=tuple(KAFKA_RELEASES),
        default="4.4",
        help="the Kafka release the nodes run: 4.4, the newest (default), or 4.1",
    )
    up.set_defaults(func=cmd_up)

    actions.add_parser(
        "down", parents=[at_dir], help="stop every node; leaves no process"
    ).set_defaults(func=cmd_down)
    status = actions.add_parser(
        "status", parents=[at_dir], help="show each node and whether it runs"
    )
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.set_defaults(func=cmd_status)

    kill = actions.add_parser(
        "kill", parents=[at_dir], help="SIGKILL broker or controller N, as a crash would"
    )
    kill.add_argument("broker", type=int, metavar="N")
    kill.set_defaults(func=cmd_kill)

    restart = actions.add_parser(
        "restart", parents=[at_dir], help="start broker or controller N again"
    )
    restart.add_argument("broker", type=int, metavar="N")
    restart.set_defaults(func=cmd_restart)

    run = actions.add_parser(
        "exec",
        parents=[at_dir],
        help="run a command where the cluster is reachable (a shaped cluster's namespace)",
    )
    run.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    run.set_defaults(func=cmd_exec)


def _dir(args: argparse.Namespace) -> Path:
    return args.dir if args.dir is not None else default_dir()


def _check_node(cluster: LocalCluster, node_id: int) -> str:
    """'broker' or 'controller', by the id."""
    if node_id in cluster.broker_ids:
        return "broker"
    if node_id in cluster.controller_ids:
        return "controller"
    raise KmedicError(
        f"no broker or controller {node_id}: this cluster's brokers are {cluster.broker_ids}, "
        f"its controllers {cluster.controller_ids}"
    )


def cmd_up(args: argparse.Namespace) -> int:
    if args.broker_count < 1:
        raise KmedicError(f"--broker-count must be at least 1, got {args.broker_count}")
    if not 1 <= args.controllers <= 5:
        raise KmedicError(f"--controllers must be 1 to 5, got {args.controllers}")
    spec = ClusterSpec(
        brokers=args.broker_count,
        controllers=args.controllers,
        racks=args.racks,
        secure=args.secure,
        nic_mbps=args.nic_mbps,
        kafka_jars=KAFKA_RELEASES[args.kafka],
    )
    cluster = LocalCluster.start(
        spec,
        _dir(args),
        stop_at_exit=False,
    )
    print(f"cluster up in {cluster.workdir}")
    print(f"  bootstrap servers: {cluster.bootstrap_servers}")
    print(f"  zookeeper:         {cluster.zk_connect}")
    print(f"  controllers:       {', '.join(map(str, cluster.controller_ids))}")
    print(f"  kafka:             {args.kafka}")
    if cluster.namespace is not None:
        print(
            f"  shaped:            {cluster.nic_mbps} Mbit/s per broker link, in network "
            f"namespace {cluster.namespace.name}; reach it with `kmedic cluster exec -- CMD`"
        )
    for broker_id in cluster.broker_ids:
        print(
            f"  broker {broker_id}: rack {cluster.rack(broker_id)}, "
            f"exporter {cluster.exporter_url(broker_id)}"
        )
    if cluster.security is not None:
        print("  secured: SASL_SSL only; each role connects as its own user, with this section:")
        for role in ROLES:
            section = yaml.safe_dump({"kafka": cluster.kafka_section(role_user(role))})
            print(f"  {role}:")
            print(textwrap.indent(section, "    "))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    cluster = LocalCluster.load(_dir(args))
    cluster.stop()
    print(f"cluster in {cluster.workdir} stopped")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    cluster = LocalCluster.load(_dir(args))
    rows = cluster.status()
    if args.json:
        print(json.dumps({"workdir": str(cluster.workdir), "nodes": rows}, indent=2))
        return 0
    print(f"cluster in {cluster.workdir} (bootstrap {cluster.bootstrap_servers})")
    for row in rows:
        state = "running" if row["running"] else "stopped"
        rack = f" rack {row['rack']}" if row["rack"] else ""
        print(f"  {row['node']:<10} port {row['port']:<6}{rack:<10} {state}")
    return 0


def cmd_kill(args: argparse.Namespace) -> int:
    cluster = LocalCluster.load(_dir(args))
    kind = _check_node(cluster, args.broker)
    if kind == "controller":
        cluster.kill_controller(args.broker)
    else:
        cluster.kill(args.broker)
    print(f"{kind} {args.broker} killed (SIGKILL)")
    return 0


def cmd_restart(args: argparse.Namespace) -> int:
    cluster = LocalCluster.load(_dir(args))
    kind = _check_node(cluster, args.broker)
    if kind == "controller":
        cluster.restart_controller(args.broker)
    else:
        cluster.restart(args.broker)
    print(f"{kind} {args.broker} running again")
    return 0


def cmd_exec(args: argparse.Namespace) -> int:
    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not command:
        raise KmedicError("cluster exec needs a command: kmedic cluster exec -- COMMAND ...")
    cluster = LocalCluster.load(_dir(args))
    with cluster.network():
        try:
            return subprocess.call(command)
        except OSError as exc:
            raise KmedicError(f"cannot run {command[0]}: {exc.strerror or exc}") from exc
