"""Placement configuration in a real ZooKeeper, through the store and the `kmedic` CLI."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator

import pytest
from helpers import kmedic_in_process, kmedic_process
from kazoo.client import KazooClient
from zk_support import zk_connect_for

from kmedic.errors import KmedicError
from manager.coordination.placement_store import ZkConfigStore
from manager.model.placement_config import BrokerGroup, Domain, IsolationGroup

pytestmark = pytest.mark.integration


@pytest.fixture
def zk_hosts(request: pytest.FixtureRequest) -> str:
    return zk_connect_for(request)


@pytest.fixture
def cluster() -> str:
    return f"cfg-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def store(zk_hosts: str, cluster: str) -> Iterator[ZkConfigStore]:
    with ZkConfigStore.connect(zk_hosts, cluster) as s:
        yield s


def test_domains_round_trip_and_a_broker_belongs_to_one_domain(store: ZkConfigStore) -> None:
    store.put(Domain(name="east", brokers=(1, 2)), create=True)
    store.put(Domain(name="west", brokers=(3, 4)), create=True)
    with pytest.raises(KmedicError, match="broker 2 is in domain 'east' and 'north'"):
        store.put(Domain(name="north", brokers=(2, 5)), create=True)
    with pytest.raises(KmedicError, match="already exists"):
        store.put(Domain(name="east", brokers=(9,)), create=True)
    store.put(Domain(name="east", brokers=(1,)), create=False)
    store.put(Domain(name="north", brokers=(2, 5)), create=True)
    cfg = store.load()
    assert {n: d.brokers for n, d in cfg.domains.items()} == {
        "east": (1,),
        "north": (2, 5),
        "west": (3, 4),
    }
    store.delete("domain", "north")
    with pytest.raises(KmedicError, match="unknown domain 'north'"):
        store.get("domain", "north")


def test_maintenance_needs_a_known_domain_and_blocks_its_deletion(store: ZkConfigStore) -> None:
    store.put(Domain(name="r1", brokers=(1, 3)), create=True)
    with pytest.raises(KmedicError, match=r"unknown domain 'r9' \(known domains: r1\)"):
        store.start_maintenance("r9", "rolling restart", 1)
    store.start_maintenance("r1", "rolling restart", 1000)
    with pytest.raises(KmedicError, match="in maintenance; end the maintenance first"):
        store.delete("domain", "r1")
    assert store.load().maintenance["r1"].reason == "rolling restart"
    store.end_maintenance("r1")
    with pytest.raises(KmedicError, match="not in maintenance"):
        store.end_maintenance("r1")
    store.delete("domain", "r1")


def test_isolation_groups_need_their_broker_groups(store: ZkConfigStore) -> None:
    with pytest.raises(KmedicError, match="primary broker group 'fast' does not exist"):
        store.put(IsolationGroup(name="pay", topics=("payments",), primary="fast"), create=True)
    store.put(BrokerGroup(name="fast", brokers=(1, 2)), create=True)
    store.put(IsolationGroup(name="pay", topics=("payments",), primary="fast"), create=True)
    with pytest.raises(KmedicError, match=r"used by isolation groups \['pay'\]"):
        store.delete("broker-group", "fast")


def test_a_concurrent_edit_on_a_stale_view_is_refused(zk_hosts: str, cluster: str) -> None:
    with (
        ZkConfigStore.connect(zk_hosts, cluster) as a,
        ZkConfigStore.connect(zk_hosts, cluster) as b,
    ):
        stale = a.load()
        b.put(Domain(name="x", brokers=(1,)), create=True)
        with pytest.raises(KmedicError, match="changed while this command ran"):
            a._commit(stale.version, lambda tx: tx.create(f"{a.base}/domains/y", b"{}"))
        assert set(a.load().domains) == {"x"}


def test_corrupt_znode_is_reported_with_its_path(store: ZkConfigStore, zk_hosts: str) -> None:
    store.load()
    raw = KazooClient(hosts=zk_hosts)
    raw.start(timeout=10)
    try:
        raw.create(f"{store.base}/domains/broken", b"not json")
    finally:
        raw.stop()
        raw.close()
    with pytest.raises(KmedicError, match="domains/broken does not hold JSON"):
        store.load()


def test_cli_domains_groups_maintenance(
    capsys: pytest.CaptureFixture[str], zk_hosts: str, cluster: str
) -> None:
    at = ["--zk", zk_hosts, "--cluster", cluster]
    assert kmedic_in_process(capsys, "domains", "create", "r1", "--brokers", "1,3", *at)[0] == 0
    assert kmedic_in_process(capsys, "domains", "create", "r2", "--brokers", "2,4", *at)[0] == 0
    code, _, err = kmedic_in_process(capsys, "domains", "update", "r2", "--brokers", "2,3", *at)
    assert code == 1 and "broker 3 is in domain 'r1' and 'r2'" in err
    code, out, _ = kmedic_in_process(capsys, "domains", "list", *at)
    assert out.splitlines() == ["r1: brokers 1,3", "r2: brokers 2,4"]
    code, out, _ = kmedic_in_process(capsys, "domains", "get", "r1", "--json", *at)
    assert json.loads(out) == [{"name": "r1", "brokers": [1, 3]}]

    code, _, err = kmedic_in_process(capsys, "maintenance", "start", "r7", "--reason", "x", *at)
    assert code == 1 and "unknown domain 'r7'" in err
    assert (
        kmedic_in_process(capsys, "maintenance", "start", "r2", "--reason", "kernel upgrade", *at)[
            0
        ]
        == 0
    )
    code, out, _ = kmedic_in_process(capsys, "maintenance", "list", *at)
    assert out.startswith("r2: since ") and out.rstrip().endswith("kernel upgrade")
    assert kmedic_in_process(capsys, "maintenance", "end", "r2", *at)[0] == 0

    assert (
        kmedic_in_process(capsys, "groups", "broker", "create", "fast", "--brokers", "1,2", *at)[0]
        == 0
    )
    code, out, _ = kmedic_in_process(
        capsys,
        "groups",
        "isolation",
        "create",
        "pay",
        "--topics",
        "payments,refunds",
        "--primary",
        "fast",
        *at,
    )
    assert code == 0 and "pay: topics payments,refunds on fast" in out
    code, _, err = kmedic_in_process(
        capsys, "groups", "anti-affinity", "create", "aa", "--topics", "bad topic!", *at
    )
    assert code == 1 and "invalid topic names ['bad topic!']" in err
    code, out, _ = kmedic_in_process(capsys, "groups", "isolation", "list", "--json", *at)
    assert json.loads(out)[0]["primary"] == "fast"


def test_cli_subprocess_names_missing_zookeeper_and_bad_broker_ids(cluster: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KMEDIC_ZK_CONNECT"}
    proc = kmedic_process("domains", "list", "--cluster", cluster, timeout=60, env=env)
    assert proc.returncode == 2  # a usage error (issue 72.3: it was 1)
    assert proc.stderr.strip() == (
        "kmedic: error: no ZooKeeper given: pass --zk HOST:PORT or --config MANAGER.yaml, "
        "or set KMEDIC_ZK_CONNECT"
    )
    proc = kmedic_process("domains", "create", "d", "--brokers", "1,x", timeout=60, env=env)
    assert proc.returncode == 2 and "'x' is not one" in proc.stderr


def test_cli_subprocess_against_zookeeper(zk_hosts: str, cluster: str) -> None:
    at = ["--zk", zk_hosts, "--cluster", cluster]
    made = kmedic_process("domains", "create", "d1", "--brokers", "5", *at, timeout=60)
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "created domain d1: brokers 5"
    listed = kmedic_process("domains", "list", *at, timeout=60)
    assert listed.stdout.strip() == "d1: brokers 5"
