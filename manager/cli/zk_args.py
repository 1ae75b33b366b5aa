"""How the ZooKeeper tools (``domains``, ``groups``, ``maintenance``, ``zk-acls``) find
kmedic's tree and prove who they are. Each setting comes from its flag, else the environment,
else the manager's config file (``--config``), so an operator can point every tool at the
file the manager runs with and nothing is typed twice.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from kazoo.client import KazooClient

from kmedic.errors import KmedicError, Unreachable, UsageError
from kmedic.kafka_client import Cluster
from manager.config import ManagerConfig, load_manager_config
from manager.coordination.acls import ZooKeeperAuth
from manager.coordination.znodes import require_cluster
from manager.model.policy import Policy


@dataclass(frozen=True)
class ZkTarget:
    zk_connect: str
    cluster: str
    root: str
    auth: ZooKeeperAuth | None
    manager: ManagerConfig | None = None
    """The manager config (``--config``), read once: a command that also checks against
    Kafka takes the cluster and the policy from it without loading the file again."""

    @property
    def kafka(self) -> Cluster | None:
        return self.manager.cluster_client if self.manager is not None else None

    @property
    def policy(self) -> Policy:
        return self.manager.policy if self.manager is not None else Policy()


def common_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    env = os.environ.get
    common.add_argument(
        "--config",
        type=Path,
        default=None,
        help="the manager's YAML: ZooKeeper, cluster, root and credentials come from it",
    )
    common.add_argument(
        "--zk",
        default=env("KMEDIC_ZK_CONNECT"),
        help="ZooKeeper connect string (default: $KMEDIC_ZK_CONNECT)",
    )
    common.add_argument(
        "--cluster",
        default=env("KMEDIC_CLUSTER"),
        help="Kafka cluster name the configuration belongs to (default: $KMEDIC_CLUSTER)",
    )
    common.add_argument("--root", default=None, help="ZooKeeper root (default /kmedic)")
    common.add_argument(
        "--zk-username",
        default=env("KMEDIC_ZK_USERNAME"),
        help="kmedic's ZooKeeper digest user (default: $KMEDIC_ZK_USERNAME)",
    )
    common.add_argument(
        "--zk-password-file",
        type=Path,
        default=env("KMEDIC_ZK_PASSWORD_FILE"),
        help="file holding that user's password (default: $KMEDIC_ZK_PASSWORD_FILE)",
    )
    common.add_argument("--json", action="store_true", help="print JSON instead of text")
    return common


def zk_target(args: argparse.Namespace) -> ZkTarget:
    manager = load_manager_config(args.config) if args.config is not None else None
    cfg = manager.zookeeper if manager is not None else None
    zk = args.zk or (cfg.zk_connect if cfg else None)
    cluster = args.cluster or (manager.cluster if manager is not None else None)
    if not zk:
        raise UsageError(
            "no ZooKeeper given: pass --zk HOST:PORT or --config MANAGER.yaml, "
            "or set KMEDIC_ZK_CONNECT"
        )
    if not cluster:
        raise UsageError(
            "no cluster given: pass --cluster NAME or --config MANAGER.yaml, or set KMEDIC_CLUSTER"
        )
    root = args.root or (cfg.root if cfg else "/kmedic")
    auth = cfg.auth if cfg else None
    if args.zk_username or args.zk_password_file:
        if not (args.zk_username and args.zk_password_file):
            raise UsageError("--zk-username and --zk-password-file go together")
        auth = ZooKeeperAuth(username=args.zk_username, password_file=args.zk_password_file)
    return ZkTarget(zk, cluster, root, auth, manager)


def warn_if_unknown(client: KazooClient, target: ZkTarget, done: str) -> None:
    """A mode, switches or a placement record may be set before a cluster's first manager
    starts (observe from day one; groups its first heal keeps), so an unknown cluster is
    written to; but it may be a typo, and stderr says so, naming the known ones."""
    try:
        require_cluster(client, target.root, target.cluster)
    except Unreachable:
        raise
    except KmedicError as exc:
        print(
            f"kmedic: warning: {exc}; {done} for a manager that starts with "
            f"cluster {target.cluster!r}",
            file=sys.stderr,
        )
