"""Placement configuration in a real ZooKeeper, through the store and the `kmedic` CLI."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_commands import COMMANDS, options, required_args
from helpers import kmedic_in_process, kmedic_process
from kazoo.client import KazooClient
from zk_support import zk_connect_for

import manager.cli.request_check as request_check
from kmedic.errors import KmedicError
from manager.analyzer.request_check import ClusterFacts
from manager.coordination.placement_store import ZkConfigStore
from manager.model.placement_config import BrokerGroup, Domain, IsolationGroup

pytestmark = pytest.mark.integration


@pytest.fixture
def zk_hosts(request: pytest.FixtureRequest) -> str:
    return zk_connect_for(request)


@pytest.fixture
def cluster(zk_hosts: str) -> str:
    """A cluster a manager has stored (its node under /kmedic, as a manager's first start
    leaves it): the commands refuse one that is not there as a typo."""
    name = f"cfg-{uuid.uuid4().hex[:8]}"
    zk = KazooClient(hosts=zk_hosts)
    zk.start(timeout=15)
    try:
        zk.ensure_path(f"/kmedic/{name}")
    finally:
        zk.stop()
        zk.close()
    return name


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


def test_every_zookeeper_command_names_an_unknown_cluster_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], zk_hosts: str, cluster: str, tmp_path: Path
) -> None:
    """Issue 72.2, for every command that takes --zk (read from the parser, so a new one is
    held to it): a cluster no manager has stored is a typo - exit 1 ("not found"), the known
    clusters named, nothing written under it. Setting a mode or switches, and creating a
    placement record, are the exceptions: they may be done before a cluster's first manager
    starts (observe from day one; isolation groups its first heal keeps), so they are stored,
    with a warning naming the known clusters."""
    typo = f"{cluster}x"
    password = tmp_path / "zk-password"
    password.write_text("secret\n")
    auth = ["--zk-username", "kmedic", "--zk-password-file", str(password)]
    seen: dict[str, tuple[int, str]] = {}
    creating = []
    for path, parser in COMMANDS:
        if "--zk" not in options(parser):
            continue
        if path[-1] == "create":
            creating.append((path, parser))
            continue
        extra = auth if path[0] == "zk-acls" else []
        argv = [*path, *required_args(parser), "--zk", zk_hosts, "--cluster", typo, *extra]
        code, _, err = kmedic_in_process(capsys, *argv)
        seen[" ".join(path)] = (code, err.strip())
    wrong = {
        c: v
        for c, v in seen.items()
        if v[0] != 1
        or f"no cluster {typo!r} in ZooKeeper under /kmedic" not in v[1]
        or cluster not in v[1]
    }
    assert not wrong, wrong
    assert len(seen) >= 26, sorted(seen)  # domains, groups, maintenance, requests, status...
    zk = KazooClient(hosts=zk_hosts)
    zk.start(timeout=15)
    try:
        assert zk.exists(f"/kmedic/{typo}") is None
        at = ["--zk", zk_hosts, "--cluster", typo]
        # A record created for a cluster no manager has stored yet: kept, with the warning.
        assert len(creating) == 4, creating  # domains, broker, isolation, anti-affinity groups
        for path, parser in creating:
            code, _, err = kmedic_in_process(capsys, *path, *required_args(parser), *at)
            assert "warning: no cluster" in err and "the record is stored" in err, (path, err)
            if zk.exists(f"/kmedic/{typo}") is not None:
                zk.delete(f"/kmedic/{typo}", recursive=True)
        code, _, err = kmedic_in_process(capsys, "domains", "create", "d1", "--brokers", "1", *at)
        assert code == 0 and "warning" in err, err
        assert kmedic_in_process(capsys, "domains", "list", *at)[1].strip() == "d1: brokers 1"
        zk.delete(f"/kmedic/{typo}", recursive=True)
        code, _, err = kmedic_in_process(capsys, "mode", "--clear", *at)
        assert code == 0 and "warning: no cluster" in err and "nothing was set" in err, err
        # Stored: the cluster is known from here on, and the next is not warned of.
        code, _, err = kmedic_in_process(capsys, "switches", "balance=off", *at)
        assert code == 0 and "warning: no cluster" in err and "switches are stored" in err, err
        code, _, err = kmedic_in_process(capsys, "mode", "observe", *at)
        assert code == 0 and err == "", err
    finally:
        zk.delete(f"/kmedic/{typo}", recursive=True)
        zk.stop()
        zk.close()


def test_a_placement_record_naming_a_broker_the_cluster_lacks_is_not_stored(
    capsys: pytest.CaptureFixture[str],
    zk_hosts: str,
    cluster: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 72.2 from the command line (the API answers 422): with the Kafka cluster given
    (--bootstrap or --config), a domain or broker group naming a broker the cluster does not
    have is an error naming the brokers it has, and nothing is stored; without it, the record
    is stored and stderr says the brokers were not checked."""
    facts = ClusterFacts(frozenset({1, 2, 3}), {"t": 3})
    asked: list[object] = []

    def read(kafka: object, later: str, policy: object = None) -> ClusterFacts:
        asked.append(kafka)
        return facts

    monkeypatch.setattr(request_check, "read_facts", read)
    at = ["--zk", zk_hosts, "--cluster", cluster, "--bootstrap", "127.0.0.1:9"]
    code, _, err = kmedic_in_process(capsys, "domains", "create", "r1", "--brokers", "1,9", *at)
    assert code == 1 and err.strip() == (
        "kmedic: error: domain 'r1' not stored: the cluster has no broker [9] (it has [1, 2, 3])"
    ), err
    code, _, err = kmedic_in_process(
        capsys, "groups", "broker", "create", "g", "--brokers", "7", *at
    )
    assert code == 1 and "broker-group 'g' not stored: the cluster has no broker [7]" in err
    assert kmedic_in_process(capsys, "domains", "list", *at[:4])[1].strip() == "(none)"
    assert kmedic_in_process(capsys, "domains", "create", "r1", "--brokers", "1,3", *at)[0] == 0
    code, _, err = kmedic_in_process(capsys, "domains", "update", "r1", "--brokers", "4", *at)
    assert code == 1 and "no broker [4]" in err
    assert asked == ["127.0.0.1:9"] * 4
    code, _, err = kmedic_in_process(capsys, "domains", "get", "r2", *at[:4])
    assert code == 1 and "unknown domain 'r2' in cluster" in err and "(known: r1)" in err
    # Not given the Kafka cluster: stored, and said unchecked.
    monkeypatch.delenv("KMEDIC_BOOTSTRAP", raising=False)
    monkeypatch.delenv("KMEDIC_BOOTSTRAP_SERVERS", raising=False)
    code, _, err = kmedic_in_process(capsys, "domains", "create", "r2", "--brokers", "9", *at[:4])
    assert code == 0 and "brokers not checked (no --bootstrap or --config)" in err, err
    assert len(asked) == 4
