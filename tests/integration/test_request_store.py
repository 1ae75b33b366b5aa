"""Operator commands in a real ZooKeeper. Requests: the commands store them in order, the
leader's state changes are fenced by its epoch and the request's version, and an operator's
cancel wins over a leader that read the request before it. The mode (`kmedic mode`): unset,
switched, read back by the cycle's one ZooKeeper read, and a corrupt mode znode named. `kmedic
status`: who leads, the mode and the open requests, as ZooKeeper holds them."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from helpers import kmedic_in_process, wait_for
from kazoo.client import KazooClient
from zk_support import zk_connect_for

from kmedic.errors import KmedicError
from manager.coordination.leadership import CoordinationConfig, Coordinator, FencedError
from manager.coordination.request_store import read_requests
from manager.coordination.state import read_state
from manager.coordination.znodes import CoordinationError, manager_path

pytestmark = pytest.mark.integration


@pytest.fixture
def zk_hosts(request: pytest.FixtureRequest) -> str:
    return zk_connect_for(request)


@pytest.fixture
def client(zk_hosts: str) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=zk_hosts)
    zk.start(timeout=15)
    yield zk
    zk.stop()
    zk.close()


def test_requests_are_stored_in_order_listed_and_cancelled(
    zk_hosts: str, client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = f"req-{uuid.uuid4().hex[:8]}"
    where = ["--zk", zk_hosts, "--cluster", cluster]
    # No manager has stored this cluster yet: a typo until shown otherwise, nothing stored.
    code, _, err = kmedic_in_process(capsys, "drain", "5", "4", *where)
    assert code == 1 and f"no cluster {cluster!r} in ZooKeeper under /kmedic" in err, err
    assert client.exists(manager_path("/kmedic", cluster)) is None
    client.ensure_path(manager_path("/kmedic", cluster))  # as a manager's first start leaves it
    code, out, _ = kmedic_in_process(capsys, "drain", "5", "4", *where)
    assert code == 0 and "(drain brokers 4, 5) is pending" in out, out
    code, out, _ = kmedic_in_process(capsys, "demote", "2", *where)
    assert code == 0, out
    stored = read_requests(client, manager_path("/kmedic", cluster))
    assert [(r.kind, r.brokers, r.state) for r in stored] == [
        ("drain", (4, 5), "pending"),
        ("demote", (2,), "pending"),
    ]
    assert stored[0].id < stored[1].id and stored[0].by
    code, out, _ = kmedic_in_process(capsys, "requests", "list", *where)
    assert out.splitlines() == [r.sentence() for r in stored]
    code, out, _ = kmedic_in_process(capsys, "requests", "cancel", stored[0].id, *where)
    assert code == 0 and "is cancelled: cancelled by an operator" in out
    code, _, err = kmedic_in_process(capsys, "requests", "cancel", stored[0].id, *where)
    assert code == 1 and "only a pending or running one can be cancelled" in err
    code, _, err = kmedic_in_process(capsys, "requests", "cancel", "req-9999999999", *where)
    assert code == 1 and "no request req-9999999999" in err
    # Not over within --wait is "not done" (3), as its help says; it was 1 (issue 71.5).
    code, _, err = kmedic_in_process(capsys, "fill", "3", "--wait", "3", *where)
    assert code == 3 and "still pending after 3s" in err


@pytest.mark.parametrize(("ends", "code"), [("partial", 4), ("failed", 3), ("done", 0)])
def test_wait_exits_as_the_request_ended(
    zk_hosts: str, client: KazooClient, ends: str, code: int
) -> None:
    """`--wait` follows the request to its end: done 0, partly done 4, failed 3."""
    import threading

    from composition.cli import main

    cluster = f"req-{uuid.uuid4().hex[:8]}"
    base = manager_path("/kmedic", cluster)
    leader = Coordinator(
        CoordinationConfig(zk_connect=zk_hosts, session_timeout_s=6.0), cluster, "m1"
    )
    leader.start()
    exits: list[int] = []
    waiting = threading.Thread(
        target=lambda: exits.append(
            main(["drain", "3", "--wait", "60", "--zk", zk_hosts, "--cluster", cluster])
        )
    )
    try:
        assert leader.wait_until_leader(20)
        waiting.start()
        (request,) = wait_for(
            lambda: read_requests(client, base), timeout=20, what="the request stored"
        )
        running = leader.requests.mark(request, "running", "moving")
        leader.requests.mark(running, ends, f"the test says {ends}")  # type: ignore[arg-type]
        waiting.join(30)
        assert exits == [code]
    finally:
        leader.stop()


def test_the_leaders_writes_are_fenced_and_lose_to_a_cancel(
    zk_hosts: str, client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = f"req-{uuid.uuid4().hex[:8]}"
    base = manager_path("/kmedic", cluster)
    client.ensure_path(base)  # as a manager's first start leaves it
    kmedic_in_process(capsys, "drain", "3", "--zk", zk_hosts, "--cluster", cluster)
    config = CoordinationConfig(zk_connect=zk_hosts, session_timeout_s=6.0)
    old = Coordinator(config, cluster, "old")
    old.start()
    try:
        assert old.wait_until_leader(20)
        (request,) = read_requests(client, base)
        running = old.requests.mark(request, "running", "3 replicas move off")
        assert read_requests(client, base)[0].state == "running"
        # An operator cancels; the leader's next write, from what it read before, loses.
        kmedic_in_process(
            capsys, "requests", "cancel", request.id, "--zk", zk_hosts, "--cluster", cluster
        )
        with pytest.raises(KmedicError, match="changed underneath"):
            old.requests.mark(running, "done", "drained")
        assert read_requests(client, base)[0].state == "cancelled"
        # A standby never held the epoch: its writes are fenced.
        kmedic_in_process(capsys, "demote", "1", "--zk", zk_hosts, "--cluster", cluster)
        demote = read_requests(client, base)[1]
        standby = Coordinator(config, cluster, "standby")
        standby.start()
        try:
            with pytest.raises(FencedError, match="never held leadership"):
                standby.requests.mark(demote, "running", "not mine to say")
        finally:
            standby.stop()
        assert read_requests(client, base)[1].state == "pending"
    finally:
        old.stop()


def test_the_mode_is_switched_read_back_and_validated(
    zk_hosts: str, client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = f"mode-{uuid.uuid4().hex[:8]}"
    where = ["--zk", zk_hosts, "--cluster", cluster]
    # A cluster kmedic never stored anything for reads as a typo, naming those there are.
    code, _, err = kmedic_in_process(capsys, "mode", *where)
    assert code == 1 and f"no cluster {cluster!r} in ZooKeeper under /kmedic (" in err
    client.ensure_path(f"/kmedic/{cluster}/manager")  # as a manager's first start leaves it
    code, out, _ = kmedic_in_process(capsys, "mode", *where)
    assert code == 0 and "not set in ZooKeeper" in out
    assert read_state(client, cluster, "/kmedic").mode is None

    code, out, _ = kmedic_in_process(capsys, "mode", "observe", "--why", "day one", *where)
    assert (
        code == 0
        and out.startswith("mode: observe, set by ")
        and out.rstrip().endswith(": day one")
    )
    seen = read_state(client, cluster, "/kmedic").mode
    assert seen is not None and seen.mode == "observe" and seen.why == "day one"

    code, out, _ = kmedic_in_process(capsys, "mode", "act", "--json", *where)
    assert code == 0 and json.loads(out)["mode"] == "act"
    seen = read_state(client, cluster, "/kmedic").mode
    assert seen is not None and seen.mode == "act"

    with pytest.raises(SystemExit) as bad:
        kmedic_in_process(capsys, "mode", "sometimes", *where)
    assert bad.value.code == 2 and "invalid choice: 'sometimes'" in capsys.readouterr().err
    # A mode set for a cluster no manager has stored yet is kept (observe from day one), and
    # stderr names the clusters known, in case it is a typo.
    typo = [*where[:-1], f"{cluster}-typo"]
    code, out, err = kmedic_in_process(capsys, "mode", "observe", *typo)
    assert code == 0 and out.startswith("mode: observe, set by "), out
    assert f"warning: no cluster '{cluster}-typo' in ZooKeeper" in err and cluster in err, err

    client.set(f"{manager_path('/kmedic', cluster)}/mode", b'{"mode": "maybe"}')
    with pytest.raises(CoordinationError, match="holds no valid mode: mode: Input should be"):
        read_state(client, cluster, "/kmedic")


def test_status_says_who_leads_the_mode_and_what_is_open(
    zk_hosts: str, client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = f"status-{uuid.uuid4().hex[:8]}"
    where = ["--zk", zk_hosts, "--cluster", cluster]
    # Issue 72.2: a typo's status said "no manager leads"; it names the clusters there are.
    code, _, err = kmedic_in_process(capsys, "status", *where)
    assert code == 1 and f"no cluster {cluster!r} in ZooKeeper" in err, err
    client.ensure_path(f"/kmedic/{cluster}/manager")  # as a manager's first start leaves it
    code, out, _ = kmedic_in_process(capsys, "status", *where)
    assert code == 0
    assert out.splitlines() == [
        f"cluster: {cluster}",
        "leader: none: no manager leads (is one running, and connected to ZooKeeper?)",
        "mode: not set in ZooKeeper; each manager runs in its config's mode (default observe)",
        "in-flight plan: none",
        "requests: none open",
        "maintenance: none",
        "switches: none set; goals as configured",
    ]
    kmedic_in_process(capsys, "mode", "observe", "--why", "day one", *where)
    kmedic_in_process(capsys, "switches", "balance=off", *where)
    kmedic_in_process(capsys, "demote", "2", *where)
    coordinator = Coordinator(
        CoordinationConfig(zk_connect=zk_hosts, session_timeout_s=6.0), cluster, "m1"
    )
    coordinator.start()
    try:
        assert coordinator.wait_until_leader(20)
        code, out, _ = kmedic_in_process(capsys, "status", *where)
        lines = out.splitlines()
        assert code == 0
        assert lines[1] == f"leader: m1, epoch {coordinator.epoch}", lines
        assert lines[2].startswith("mode: observe, set by ") and lines[2].endswith(": day one")
        assert lines[4].startswith("requests: request req-") and "(demote brokers 2)" in lines[4]
        assert lines[6].startswith("switches: balance off, set by "), lines
        code, out, _ = kmedic_in_process(capsys, "status", "--json", *where)
        doc = json.loads(out)
        assert doc["leader"]["instance"] == "m1" and doc["epoch"] == coordinator.epoch
        assert doc["mode"]["mode"] == "observe"
        assert doc["switches"]["goals"] == {"balance": False}
        assert [r["kind"] for r in doc["requests"]] == ["demote"]
    finally:
        coordinator.stop()


def test_switches_are_set_merged_handed_back_and_read_by_the_cycle(
    zk_hosts: str, client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kmedic switches`: unset, two switches set by two commands (both kept), one handed
    back to the config, read by the cycle's one read; a name that is not a goal is a usage
    error and writes nothing; a corrupt znode is named."""
    cluster = f"sw-{uuid.uuid4().hex[:8]}"
    where = ["--zk", zk_hosts, "--cluster", cluster]
    base = manager_path("/kmedic", cluster)
    code, _, err = kmedic_in_process(capsys, "switches", *where)
    assert code == 1 and f"no cluster {cluster!r}" in err, err  # a typo until a manager stores it
    client.ensure_path(base)
    code, out, _ = kmedic_in_process(capsys, "switches", *where)
    assert code == 0 and "none set at run time" in out, out
    assert kmedic_in_process(capsys, "switches", "balance=off", *where)[0] == 0
    code, out, _ = kmedic_in_process(capsys, "switches", "even_spread=off", "--why", "x", *where)
    assert code == 0 and "balance off, even_spread off" in out, out
    assert read_state(client, cluster, "/kmedic").switches.goals == {  # type: ignore[union-attr]
        "balance": False,
        "even_spread": False,
    }
    assert kmedic_in_process(capsys, "switches", "balance=config", *where)[0] == 0
    code, out, _ = kmedic_in_process(capsys, "switches", "--json", *where)
    assert json.loads(out)["goals"] == {"even_spread": False}
    with pytest.raises(SystemExit) as usage:
        kmedic_in_process(capsys, "switches", "heal=off", *where)
    assert usage.value.code == 2 and "'heal' is not a goal" in capsys.readouterr().err
    code, out, _ = kmedic_in_process(capsys, "switches", "--json", *where)
    assert json.loads(out)["goals"] == {"even_spread": False}  # nothing written
    client.set(f"{base}/switches", b'{"goals": {"heal": false}}')
    with pytest.raises(CoordinationError, match=f"{base}/switches holds no valid switches"):
        read_state(client, cluster, "/kmedic")
