"""`kmedic zk-acls check|fix`: are kmedic's znodes protected by kmedic's ACL (manager
``zookeeper.auth``)? ``check`` lists every znode of the cluster's tree (and the root) whose
ACL is another, exit 3 when there is one; ``fix`` puts kmedic's ACL on exactly those — the
step a manager's start warning (``zookeeper_acls_not_kmedics``) asks for.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from kazoo.exceptions import NoAuthError

from kmedic.errors import KmedicError
from kmedic.exits import Exit
from manager.cli.zk_args import ZkTarget, common_parser, zk_target
from manager.coordination.acls import ZooKeeperAuth, fix_tree, tree_problems
from manager.coordination.session import zk_session
from manager.coordination.znodes import require_cluster


def register(subparsers: Any) -> None:
    common = common_parser()
    parser = subparsers.add_parser("zk-acls", help="check or fix the ACLs of kmedic's znodes")
    verbs = parser.add_subparsers(dest="verb", required=True)
    verbs.add_parser(
        "check", parents=[common], help="list znodes without kmedic's ACL (exit 3 if any)"
    ).set_defaults(func=_check)
    verbs.add_parser(
        "fix", parents=[common], help="put kmedic's ACL on every znode `check` lists"
    ).set_defaults(func=_fix)


def _target(args: argparse.Namespace) -> tuple[ZkTarget, ZooKeeperAuth]:
    target = zk_target(args)
    if target.auth is None:
        raise KmedicError(
            "zk-acls needs kmedic's ZooKeeper identity: zookeeper.auth in --config, or "
            "--zk-username with --zk-password-file"
        )
    return target, target.auth


def _check(args: argparse.Namespace) -> int:
    target, auth = _target(args)
    with zk_session(target.zk_connect, auth=auth) as client:
        require_cluster(client, target.root, target.cluster)
        problems = tree_problems(client, target.root, target.cluster, auth)
    if args.json:
        print(json.dumps({"not_kmedics": problems}, indent=2))
    elif not problems:
        print(f"every znode under {target.root}/{target.cluster} carries kmedic's ACL")
    else:
        print(f"{len(problems)} znode(s) without kmedic's ACL (fix: kmedic zk-acls fix):")
        for path, acl in problems.items():
            print(f"  {path}: {acl or 'no ACL'}")
    return Exit.NOT_DONE if problems else Exit.OK


def _fix(args: argparse.Namespace) -> int:
    target, auth = _target(args)
    with zk_session(target.zk_connect, auth=auth) as client:
        require_cluster(client, target.root, target.cluster)
        try:
            fixed = fix_tree(client, target.root, target.cluster, auth)
        except NoAuthError as exc:
            raise KmedicError(
                f"ZooKeeper refused to change an ACL under {target.root}: kmedic's identity "
                f"({auth.username}) lacks admin permission there; a ZooKeeper "
                "superuser must fix that znode"
            ) from exc
    if args.json:
        print(json.dumps({"fixed": fixed}, indent=2))
    else:
        print(f"kmedic's ACL put on {len(fixed)} znode(s)")
        for path in fixed:
            print(f"  {path}")
    return 0
