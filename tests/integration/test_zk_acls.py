"""kmedic's znodes on a real ZooKeeper with digest authentication: a manager leading with
``zookeeper.auth`` stores its epoch, plan and placement config under its own ACL; a client
without the credentials can neither read nor change them, nor add a failure domain; a reader
identity reads and cannot write; an open tree is reported at start and fixed on request."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import kmedic_process, wait_for
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import OPEN_ACL_UNSAFE
from zk_support import zk_connect_for

from kmedic.errors import KmedicError
from manager.coordination.acls import ZooKeeperAuth, describe, reader_digest
from manager.coordination.leadership import CoordinationConfig, Coordinator
from manager.coordination.placement_store import ZkConfigStore
from manager.coordination.plan_document import PlanDocument
from manager.model.placement_config import Domain

pytestmark = pytest.mark.integration

AUTH = ZooKeeperAuth(
    username="kmedic",
    password="zk-secret",  # type: ignore[arg-type]
    readers=[reader_digest("ops", "ops-password")],
)


def client(hosts: str, who: str | None = None) -> KazooClient:
    auth = [("digest", who)] if who else None
    c = KazooClient(hosts=hosts, timeout=10, auth_data=auth)
    c.start(timeout=15)
    return c


@pytest.fixture
def zk_hosts(request: pytest.FixtureRequest) -> str:
    return zk_connect_for(request)


@pytest.fixture
def secured(zk_hosts: str) -> Iterator[tuple[Coordinator, str]]:
    """A leading manager with auth, its plan stored, under a root of its own."""
    root = f"/kmedic-acl-{uuid.uuid4().hex[:8]}"
    cfg = CoordinationConfig(zk_connect=zk_hosts, root=root, session_timeout_s=6, auth=AUTH)
    coord = Coordinator(cfg, "c1", "manager-a")
    coord.start()
    try:
        wait_for(lambda: coord.is_leader, timeout=30, what="the secured manager to lead")
        coord.plans.write(PlanDocument(decision="heal"), None)
        yield coord, root
    finally:
        coord.stop()


def test_without_credentials_nothing_of_kmedics_can_be_read_or_changed(
    secured: tuple[Coordinator, str], zk_hosts: str
) -> None:
    coord, root = secured
    plan = f"{root}/c1/manager/plan"
    anyone = client(zk_hosts)
    try:
        for attempt in (
            lambda: anyone.set(plan, b'{"plan": {"moves": ["evil"]}}'),
            lambda: anyone.delete(plan),
            lambda: anyone.set(coord.epoch_path, b"999"),
            lambda: anyone.create(f"{root}/c1/manager/leader-2", b"x"),
            lambda: anyone.get(plan),
        ):
            with pytest.raises(NoAuthError):
                attempt()
        with (
            pytest.raises(KmedicError, match="NoAuthError"),
            ZkConfigStore.connect(zk_hosts, "c1", root) as store,
        ):
            store.put(Domain(name="evil", brokers=(1,)), create=True)
    finally:
        anyone.stop()
        anyone.close()
    # And kmedic's own identity still can: the plan is kmedic's to change.
    stored = coord.plans.read()
    assert stored is not None and stored.plan.moves == ()
    with ZkConfigStore.connect(zk_hosts, "c1", root, auth=AUTH) as store:
        store.put(Domain(name="rack-a", brokers=(1,)), create=True)
        assert list(store.load().domains) == ["rack-a"]


def test_a_reader_reads_and_cannot_write(secured: tuple[Coordinator, str], zk_hosts: str) -> None:
    _, root = secured
    plan = f"{root}/c1/manager/plan"
    ops = client(zk_hosts, "ops:ops-password")
    try:
        data, _ = ops.get(plan)
        assert b'"decision": "heal"' in data
        with pytest.raises(NoAuthError):
            ops.set(plan, b"{}")
    finally:
        ops.stop()
        ops.close()


def test_every_znode_carries_kmedics_acl(secured: tuple[Coordinator, str]) -> None:
    coord, root = secured
    assert coord.acl_problems() == {}
    wanted = sorted(describe(a) for a in AUTH.acls())
    acls, _ = coord._client.get_acls(f"{root}/c1/manager/plan")
    assert sorted(describe(a) for a in acls) == wanted


def test_an_open_tree_is_reported_at_start_and_fixed_on_request(zk_hosts: str) -> None:
    root = f"/kmedic-acl-{uuid.uuid4().hex[:8]}"
    anyone = client(zk_hosts)
    try:
        # What an earlier kmedic without auth left: open to the world.
        anyone.create(f"{root}/c1/manager/epoch", b"3", makepath=True, acl=OPEN_ACL_UNSAFE)
        cfg = CoordinationConfig(zk_connect=zk_hosts, root=root, session_timeout_s=6, auth=AUTH)
        coord = Coordinator(cfg, "c1", "manager-a")
        coord.start()
        try:
            open_ = coord.acl_problems()
            assert set(open_) >= {root, f"{root}/c1", f"{root}/c1/manager/epoch"}
            assert set(open_.values()) == {"world:anyone:cdrwa"}
            fixed = coord.fix_acls()
            assert set(fixed) == set(open_)
            assert coord.acl_problems() == {}
            with pytest.raises(NoAuthError):
                anyone.set(f"{root}/c1/manager/epoch", b"999")
        finally:
            coord.stop()
    finally:
        anyone.stop()
        anyone.close()


def test_without_auth_nothing_changes(zk_hosts: str) -> None:
    """No ``auth``: the znodes stay open, as on a ZooKeeper without authentication."""
    root = f"/kmedic-acl-{uuid.uuid4().hex[:8]}"
    cfg = CoordinationConfig(zk_connect=zk_hosts, root=root, session_timeout_s=6)
    coord = Coordinator(cfg, "c1", "manager-a")
    coord.start()
    try:
        assert coord.acl_problems() == {}
        acls: Any
        acls, _ = coord._client.get_acls(coord.epoch_path)
        assert [describe(a) for a in acls] == ["world:anyone:cdrwa"]
    finally:
        coord.stop()


def test_the_cli_checks_and_fixes_acls_and_the_admin_tools_use_the_credentials(
    zk_hosts: str, tmp_path: Path
) -> None:
    root = f"/kmedic-acl-{uuid.uuid4().hex[:8]}"
    password_file = tmp_path / "zk.password"
    password_file.write_text("zk-secret\n")
    config = tmp_path / "manager.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "cluster": "c1",
                "bootstrap": "127.0.0.1:9",
                "zookeeper": {
                    "zk_connect": zk_hosts,
                    "root": root,
                    "auth": {"username": "kmedic", "password_file": str(password_file)},
                },
            }
        )
    )
    anyone = client(zk_hosts)
    try:
        anyone.create(f"{root}/c1/manager/epoch", b"3", makepath=True, acl=OPEN_ACL_UNSAFE)
        check = kmedic_process("zk-acls", "check", "--config", str(config))
        assert check.returncode == 3, check.stderr  # problems found
        assert f"{root}/c1/manager/epoch: world:anyone:cdrwa" in check.stdout
        fixed = kmedic_process("zk-acls", "fix", "--config", str(config), "--json")
        assert fixed.returncode == 0, fixed.stderr
        assert f"{root}/c1/manager/epoch" in json.loads(fixed.stdout)["fixed"]
        again = kmedic_process("zk-acls", "check", "--config", str(config))
        assert again.returncode == 0 and "carries kmedic's ACL" in again.stdout, again.stdout
        with pytest.raises(NoAuthError):
            anyone.set(f"{root}/c1/manager/epoch", b"999")

        # The placement tools authenticate from the same file, or from flags.
        made = kmedic_process(
            "domains", "create", "rack-a", "--brokers", "1,2", "--config", str(config)
        )
        assert made.returncode == 0, made.stderr
        flags = ["--zk", zk_hosts, "--cluster", "c1", "--root", root]
        listed = kmedic_process(
            "domains",
            "list",
            *flags,
            "--zk-username",
            "kmedic",
            "--zk-password-file",
            str(password_file),
        )
        assert listed.returncode == 0 and "rack-a" in listed.stdout, listed.stderr
        # Without them: one line, no traceback, nothing read.
        refused = kmedic_process("domains", "list", *flags)
        assert refused.returncode == 1
        assert refused.stderr.startswith("kmedic: error:") and "NoAuth" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "zk-secret" not in check.stdout + fixed.stdout + refused.stderr + made.stdout
    finally:
        anyone.stop()
        anyone.close()
