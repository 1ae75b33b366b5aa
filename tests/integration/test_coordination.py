"""Leader election, fencing and session-expiry policy against a real ZooKeeper."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from helpers import wait_for
from kazoo.client import KazooClient
from zk_support import TcpProxy, expire_session, zk_connect_for

from manager.coordination.leadership import CoordinationConfig, Coordinator, FencedError
from manager.coordination.move_budget import moves_in_window, to_field
from manager.coordination.plan_document import PlanDocument
from manager.coordination.plan_store import PlanConflictError

EMPTY = PlanDocument()

pytestmark = pytest.mark.integration


class Recorder:
    def __init__(self) -> None:
        self.acquired: list[int] = []
        self.lost: list[str] = []
        self.shutdown: list[str] = []


@pytest.fixture
def zk_hosts(request: pytest.FixtureRequest) -> str:
    return zk_connect_for(request)


@pytest.fixture
def make(zk_hosts: str) -> Iterator[Callable[..., tuple[Coordinator, Recorder]]]:
    """Builds coordinators for one fresh cluster name; stops them all afterwards."""
    cluster = f"coord-{uuid.uuid4().hex[:8]}"
    made: list[Coordinator] = []

    def build(name: str, hosts: str | None = None, **cfg: Any) -> tuple[Coordinator, Recorder]:
        rec = Recorder()
        settings: dict[str, Any] = {
            "session_timeout_s": 6.0,
            "reconnect_delay_s": 0.2,
            "reconnect_max_delay_s": 1.0,
            **cfg,
        }
        config = CoordinationConfig(zk_connect=hosts or zk_hosts, **settings)
        coord = Coordinator(
            config,
            cluster,
            name,
            on_leadership_acquired=rec.acquired.append,
            on_leadership_lost=rec.lost.append,
            on_shutdown=rec.shutdown.append,
            reconcile_interval_s=0.2,
        )
        coord.start()
        made.append(coord)
        return coord, rec

    yield build
    for coord in made:
        coord.stop()


@pytest.fixture
def proxy(zk_hosts: str) -> Iterator[TcpProxy]:
    relay = TcpProxy(zk_hosts).start()
    yield relay
    relay.stop()


def session_of(coord: Coordinator) -> tuple[int, bytes]:
    cid = coord._client.client_id
    assert cid is not None
    return (int(cid[0]), bytes(cid[1]))


def test_two_instances_elect_exactly_one_leader(
    make: Callable[..., tuple[Coordinator, Recorder]],
) -> None:
    a, _ = make("a")
    b, _ = make("b")
    wait_for(lambda: a.is_leader or b.is_leader, timeout=10, what="a leader")
    leader, standby = (a, b) if a.is_leader else (b, a)
    assert leader.may_act() and not standby.may_act()
    assert leader.verify_leadership()
    info = leader.current_leader()
    assert info is not None and info.instance == leader.instance_id
    assert info.epoch == leader.epoch == leader.current_epoch() >= 1

    # The leader resigns: the standby takes over with a strictly higher epoch.
    old_epoch = leader.epoch
    leader.stop()
    wait_for(lambda: standby.may_act(), timeout=10, what="the standby to take over")
    assert standby.epoch == old_epoch + 1


def test_expired_leader_is_replaced_and_fenced(
    make: Callable[..., tuple[Coordinator, Recorder]], proxy: TcpProxy, zk_hosts: str
) -> None:
    a, rec_a = make("a", hosts=proxy.address)
    wait_for(a.may_act, timeout=10, what="a to lead")
    b, rec_b = make("b")
    started_at = time.time()
    stored = a.plans.write(
        PlanDocument.model_validate(
            {
                "moves": [{"topic": "t", "partition": 0, "target": [1, 2, 3]}],
                "moves_started": to_field([(started_at, 7)]),
            }
        ),
        None,
    )
    assert stored.version == 0 and stored.epoch == a.epoch

    # Cut a from ZooKeeper: it cannot act while unreachable, even though it still leads.
    session = session_of(a)
    proxy.block()
    wait_for(lambda: not a.may_act(), timeout=5, what="a to stop acting while partitioned")
    assert not b.is_leader

    # Its session expires meanwhile; b takes over with a higher epoch and adopts the plan.
    expire_session(zk_hosts, session)
    wait_for(b.may_act, timeout=10, what="b to take over")
    assert b.epoch == a.epoch + 1
    adopted = b.plans.read()
    assert adopted is not None and adopted.plan.moves[0].target == (1, 2, 3)
    # The hourly move budget travels with the plan: b counts a's moves.
    assert moves_in_window(adopted.plan.moves_started, time.time()) == 7

    # The link heals: a learns its session expired, sees the newer epoch, stays a standby and
    # is told to drop its in-flight decisions.
    proxy.unblock()
    wait_for(lambda: rec_a.lost, timeout=20, what="a to be told it lost leadership")
    assert "another instance took leadership" in rec_a.lost[0]
    assert a.connected and not a.may_act() and b.may_act()
    assert rec_a.shutdown == []

    # The stale leader's compare-and-set is rejected by ZooKeeper, even with the right version.
    with pytest.raises(FencedError, match="newer leader"):
        a.plans.write(EMPTY, adopted.version)
    with pytest.raises(FencedError):
        a.plans.clear(adopted.version)
    # The new leader writes with compare-and-set; a wrong version is a conflict.
    newer = b.plans.write(EMPTY, adopted.version)
    assert newer.version == adopted.version + 1 and newer.epoch == b.epoch
    with pytest.raises(PlanConflictError):
        b.plans.write(EMPTY, adopted.version)
    stored_now = b.plans.read()
    assert stored_now is not None and stored_now.epoch == b.epoch and stored_now.plan == EMPTY
    assert rec_b.acquired == [b.epoch]


def test_the_cordon_ledger_passes_to_the_next_leader_and_fences_the_last(
    make: Callable[..., tuple[Coordinator, Recorder]],
) -> None:
    """The cordons kmedic wrote (issue 71.7) live in ZooKeeper, read by the next leader;
    a leader that lost its epoch cannot write them."""
    from kmedic.errors import KmedicError
    from manager.coordination.cordon_ledger import CordonLedger, LedgerEntry

    a, _ = make("a")
    wait_for(a.may_act, timeout=10, what="a to lead")
    b, _ = make("b")
    assert a.cordon_ledger.load() == {}
    a.cordon_ledger.save({4: LedgerEntry("req-0000000001", 5)})
    a.cordon_ledger.save({4: LedgerEntry("req-0000000001", 5), 6: LedgerEntry(None, 7)})
    a.stop()
    wait_for(b.may_act, timeout=10, what="b to take over")
    assert b.cordon_ledger.load() == {4: LedgerEntry("req-0000000001", 5), 6: LedgerEntry(None, 7)}
    b.cordon_ledger.save({6: LedgerEntry(None, 7)})
    c, _ = make("c")  # a standby: it reads, and may not write
    assert c.cordon_ledger.load() == {6: LedgerEntry(None, 7)}
    with pytest.raises(FencedError, match="never held leadership"):
        c.cordon_ledger.save({})
    # A write over a version that moved since it was read is refused, not lost.
    other = CordonLedger(b, b.cordon_ledger.path.rsplit("/", 1)[0])
    other.load()
    other.save({})
    with pytest.raises(KmedicError, match="changed underneath"):
        b.cordon_ledger.save({1: LedgerEntry(None, 1)})
    assert c.cordon_ledger.load() == {}


def test_reconnect_reacquires_when_nobody_else_took_over(
    make: Callable[..., tuple[Coordinator, Recorder]], proxy: TcpProxy, zk_hosts: str
) -> None:
    a, rec_a = make("a", hosts=proxy.address)
    wait_for(a.may_act, timeout=10, what="a to lead")
    first = a.epoch
    session = session_of(a)
    proxy.block()
    expire_session(zk_hosts, session)
    proxy.unblock()
    wait_for(lambda: a.may_act() and a.epoch > first, timeout=20, what="a to lead again")
    assert a.epoch == first + 1
    assert rec_a.acquired == [first, first + 1]
    assert rec_a.lost == [] and rec_a.shutdown == []
    assert a.verify_leadership()


def test_a_connection_dropped_just_after_the_leader_check_answers_keeps_leadership(
    make: Callable[..., tuple[Coordinator, Recorder]], proxy: TcpProxy
) -> None:
    """A clean clone's CI run: the leader's periodic check read its znode, the connection
    dropped before the owner was compared, kazoo's ``client_id`` read None, and a leader
    whose session was still alive resigned ("the leader znode was deleted or taken over")."""
    a, rec_a = make("a", hosts=proxy.address)
    wait_for(a.may_act, timeout=10, what="a to lead")
    client = a._client
    answered = client.exists

    def exists_then_drop(path: str, watch: Any = None) -> Any:
        stat = answered(path, watch=watch)
        proxy.block()
        wait_for(lambda: a.session_id() is None, timeout=10, what="kazoo to see the drop")
        return stat

    client.exists = exists_then_drop  # type: ignore[method-assign]
    try:
        a._reconcile()
    finally:
        client.exists = answered  # type: ignore[method-assign]
        proxy.unblock()
    assert rec_a.lost == []
    wait_for(a.may_act, timeout=20, what="a to act again on the same session")
    assert rec_a.acquired == [a.epoch] and a.verify_leadership()


def test_shutdown_policy_gives_up_on_session_expiry(
    make: Callable[..., tuple[Coordinator, Recorder]], zk_hosts: str
) -> None:
    a, rec_a = make("a", session_expired_policy="shutdown")
    wait_for(a.may_act, timeout=10, what="a to lead")
    expire_session(zk_hosts, session_of(a))
    wait_for(lambda: rec_a.shutdown, timeout=20, what="a to shut down")
    assert "policy is `shutdown`" in rec_a.shutdown[0]
    assert a.shutdown_reason is not None and not a.may_act()
    assert rec_a.lost and "shutdown" in rec_a.lost[0]


def test_gives_up_after_the_configured_reconnect_tries(
    make: Callable[..., tuple[Coordinator, Recorder]], proxy: TcpProxy
) -> None:
    a, rec_a = make("a", hosts=proxy.address, max_reconnect_tries=3)
    wait_for(a.may_act, timeout=10, what="a to lead")
    proxy.block()
    wait_for(lambda: not a.may_act(), timeout=5, what="a to stop acting")
    wait_for(lambda: rec_a.shutdown, timeout=30, what="a to give up reconnecting")
    assert "after 3 tries" in rec_a.shutdown[0]
    assert not a.may_act()


def test_leader_noticing_late_is_still_fenced(
    make: Callable[..., tuple[Coordinator, Recorder]], zk_hosts: str
) -> None:
    """Even before a leader notices it was superseded, ZooKeeper rejects its plan writes."""
    a, _ = make("a")
    wait_for(a.may_act, timeout=10, what="a to lead")
    stored = a.plans.write(EMPTY, None)
    # Another party acquires (the epoch moves) while a's local state still says it leads.
    admin = KazooClient(hosts=zk_hosts)
    admin.start(timeout=10)
    try:
        data, stat = admin.get(a.epoch_path)
        admin.set(a.epoch_path, str(int(data) + 1).encode(), version=stat.version)
    finally:
        admin.stop()
        admin.close()
    with pytest.raises(FencedError, match=f"holds epoch {a.epoch}"):
        a.plans.write(PlanDocument(decision="never stored"), stored.version)
    assert not a.verify_leadership()
    still = a.plans.read()
    assert still is not None and still.plan == EMPTY


def test_a_short_partition_keeps_leadership_and_epoch(
    make: Callable[..., tuple[Coordinator, Recorder]], proxy: TcpProxy
) -> None:
    """A network blip shorter than the session timeout: no action meanwhile, no new epoch."""
    a, rec_a = make("a", hosts=proxy.address)
    wait_for(a.may_act, timeout=10, what="a to lead")
    epoch = a.epoch
    proxy.block()
    wait_for(lambda: not a.may_act(), timeout=5, what="a to stop acting")
    proxy.unblock()
    wait_for(a.may_act, timeout=10, what="a to act again")
    assert a.epoch == epoch and a.current_epoch() == epoch
    assert rec_a.acquired == [epoch] and rec_a.lost == [] and rec_a.shutdown == []
    assert a.verify_leadership()


def test_an_acquisition_whose_create_reply_was_lost_is_finished(zk_hosts: str) -> None:
    """Found by the soak: ZooKeeper paused while the standby took over; the leader znode's
    create reached the server but its reply was lost (ConnectionLoss), the session survived,
    and the instance then saw its own znode as someone else's leadership - the znode named it
    with no epoch, and nobody led until the process was stopped."""
    from kazoo.exceptions import ConnectionLoss

    config = CoordinationConfig(zk_connect=zk_hosts, session_timeout_s=6.0)
    coord = Coordinator(config, f"coord-{uuid.uuid4().hex[:8]}", "m2", reconcile_interval_s=0.2)
    real_create = coord._client.create
    lost: list[str] = []

    def create_then_lose_the_reply(path: str, *args: Any, **kwargs: Any) -> Any:
        created = real_create(path, *args, **kwargs)
        if path == coord.leader_path and not lost:
            lost.append(path)
            raise ConnectionLoss()
        return created

    coord._client.create = create_then_lose_the_reply  # type: ignore[method-assign]
    coord.start()
    try:
        wait_for(coord.may_act, timeout=10, what="m2 to lead after its create lost its reply")
        assert lost == [coord.leader_path]
        leader = coord.current_leader()
        assert leader is not None and leader.instance == "m2"
        assert leader.epoch == coord.epoch == coord.current_epoch() >= 1
    finally:
        coord.stop()


def test_a_leader_whose_packets_are_dropped_stops_acting_on_its_lease_not_its_reads(
    make: Callable[..., tuple[Coordinator, Recorder]], proxy: TcpProxy
) -> None:
    """A silent drop: ZooKeeper hears nothing more from the leader, and nothing tells the
    leader. kazoo notices only when its read times out (two thirds of the session timeout);
    a write started before that could reach Kafka after the session expired and the standby
    took over. The lease ends half a session timeout after the last answered check: the
    leader stops well before kazoo would have told it, and long before the standby leads."""
    session_s = 12.0  # the lease 6 s, kazoo's read timeout 8 s: room for a busy machine
    a, rec_a = make("a", hosts=proxy.address, session_timeout_s=session_s)
    wait_for(a.may_act, timeout=10, what="a to lead")
    b, _ = make("b", session_timeout_s=session_s)
    assert 0 < a.lease_left_s() <= session_s / 2
    proxy.freeze()
    frozen_at = time.monotonic()
    wait_for(lambda: not a.may_act(), timeout=session_s, interval=0.05, what="a's lease to run out")
    stopped_after = time.monotonic() - frozen_at
    # kazoo's own read timeout (8 s here) had not passed: the lease, not the drop, stopped it.
    assert stopped_after < session_s * 2 / 3, stopped_after
    assert a.connected, "kazoo noticed first: the lease was not what stopped the leader"
    assert a.lease_left_s() == 0
    wait_for(b.may_act, timeout=3 * session_s, what="b to take over once a's session expired")
    took_over_after = time.monotonic() - frozen_at
    assert took_over_after >= session_s - 0.5, took_over_after
    assert not a.may_act()
    proxy.thaw()
    wait_for(lambda: rec_a.lost, timeout=3 * session_s, what="a to learn it lost")
    assert not a.may_act() and b.may_act()
