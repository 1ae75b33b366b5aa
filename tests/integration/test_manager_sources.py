"""The manager's Admin API read while a broker dies: for the seconds between a SIGKILL and the
controller fencing the broker, the dead broker is still registered and still named as the
controller by some brokers' metadata. The manager must keep seeing the cluster through the
brokers that are up (found by the chaos soak: three failed reads, a blind cycle and an alert)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from helpers import wait_for
from kafka.net.manager import KafkaConnectionManager

from manager.model.placement_config import PlacementConfig
from manager.model.snapshot import Leadership
from manager.monitor.sources import AdminUnavailable, ClusterSources

pytestmark = pytest.mark.integration

LEADERSHIP = Leadership(holder="test", epoch=1, current_epoch=1, is_leader=True)


def sources_for(cluster: Any, bootstrap: str | None = None) -> ClusterSources:
    """The manager's sources on the session cluster (bootstrapped from its brokers, or from
    ``bootstrap``); only their Admin API reads are used."""
    return ClusterSources(
        cluster="test",
        bootstrap=bootstrap or cluster.bootstrap_servers,
        stats_topic="kmedic.brokerstats",
        loads_topic="kmedic.replica-loads",
        stats_lookback_s=60,
        request_timeout_s=4.0,
    )


def read(sources: ClusterSources) -> set[int]:
    """One cycle's read; the ids of the live (unfenced) brokers it saw."""
    obs = sources.observe(
        int(time.time() * 1000),
        placement=PlacementConfig(),
        leadership=LEADERSHIP,
        own_moves=frozenset(),
        moves_last_hour=0,
    )
    return set(obs.live)


def test_a_dying_broker_does_not_blind_the_manager(healthy_cluster: Any) -> None:
    cluster = healthy_cluster
    victim = cluster.broker_ids[-1]
    sources = sources_for(cluster)
    try:
        assert victim in read(sources)
        # The observation timed by stage (kmedic_observe_stage_seconds).
        assert set(sources.stages) == {"quorum", "admin", "feeds", "settings"}
        assert all(0 <= s < 30 for s in sources.stages.values()), sources.stages
        cluster.kill(victim)
        killed_at = time.monotonic()
        reads, failures, fresh = 0, [], 0
        # Until the controller has fenced the victim, and 3 s more: every read starts from a
        # client whose cached controller is the dead broker (what a manager whose controller
        # died has), and every other read from a fresh client, which picks its nodes at random.
        fenced_at: float | None = None
        while fenced_at is None or time.monotonic() - fenced_at < 3.0:
            assert time.monotonic() - killed_at < 60, "the controller never fenced the victim"
            if reads % 2:
                sources._close_admin()
                fresh += 1
            else:
                sources._client()._controller_id = victim
            try:
                live = read(sources)
            except AdminUnavailable as exc:
                failures.append(f"{time.monotonic() - killed_at:.1f}s: {exc}")
            else:
                if fenced_at is None and victim not in live:
                    fenced_at = time.monotonic()
            reads += 1
        fenced_s = fenced_at - killed_at
        print(f"{reads} reads ({fresh} on a fresh client), fenced after {fenced_s:.1f}s")
        assert not failures, f"{len(failures)} of {reads} reads were blind: {failures[:3]}"
    finally:
        sources.stop_admin_clients()  # the feeds were never started
        cluster.restart(victim)
        wait_for(lambda: victim in read_quietly(cluster), timeout=60, what="the victim back")


def read_quietly(cluster: Any) -> set[int]:
    sources = sources_for(cluster)
    try:
        return read(sources)
    except AdminUnavailable:
        return set()
    finally:
        sources.stop_admin_clients()


def test_a_broker_fenced_and_back_between_two_cycles_is_catching_up(healthy_cluster: Any) -> None:
    """A broker stopped past its session timeout (fenced, out of every ISR) and resumed between
    two reads: no read saw it gone, yet its return starts the recovery window, so its lagging
    followers are catch-up, not a slow follower that pages (found by the soak's hang episode)."""
    cluster = healthy_cluster
    victim = cluster.broker_ids[0]
    sources = sources_for(cluster)
    seen: list[str] = []
    registered: list[frozenset[int]] = []
    inner = sources.registrations._read

    def traced() -> frozenset[int]:
        t = time.monotonic()
        try:
            out = inner()
        except Exception as exc:
            seen.append(f"{t:.1f} err {exc!r}"[:120])
            raise
        seen.append(f"{t:.1f} {sorted(out)}")
        registered.append(out)
        return out

    sources.registrations._read = traced
    sources.registrations.start()
    try:
        assert victim in read(sources)
        # The watch sees a broker leave only after a read that saw it registered (cc33: on a
        # loaded machine its first read came after the fencing, and it never saw it go).
        wait_for(
            lambda: any(victim in r for r in registered),
            timeout=30,
            what=f"the watch's first read with broker {victim}",
        )
        cluster.pause(victim)
        try:
            wait_for(
                lambda: victim not in read_quietly(cluster),
                timeout=60,
                what=f"broker {victim} fenced",
            )
            # Fenced until the watch, asking four times a second, has seen it away (a GC pause of a
            # few seconds past the session; on a loaded machine the watch's reads are slower).
            try:
                wait_for(
                    lambda: victim in sources.registrations.away(),
                    timeout=60,
                    what=f"the registration watch to see broker {victim} away",
                )
            except pytest.fail.Exception as exc:
                pytest.fail(f"{exc}; the watch's last reads: {'; '.join(seen[-30:])}")
        finally:
            cluster.resume(victim)
        resumed_ms = int(time.time() * 1000)
        # The cycle's reads start again only now: none saw the victim away (a broker whose
        # metadata lags a moment may still answer without it; the next read then sees it).
        wait_for(lambda: victim in read(sources), timeout=60, what="the victim back")
        back_ms = sources.returned_ms.get(victim)
        assert back_ms is not None and back_ms >= resumed_ms - 2000, (
            sources.returned_ms,
            "; ".join(seen),
        )
    finally:
        sources.registrations.stop()
        sources.stop_admin_clients()


def test_a_hung_broker_does_not_take_the_reads_that_name_no_broker(
    healthy_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kafka-python sends a request that names no broker to one it picks at random: a hung
    broker (a long GC pause) swallowed its share of a cycle's reads, retries included, until
    the cycle was blind (CI: the hung-broker e2e test's refusal never came in time). Made to
    pick the hung broker whenever it may, the reads send it one request, which times out,
    and then go elsewhere."""
    cluster = healthy_cluster
    hung = cluster.broker_ids[-1]
    sources = sources_for(cluster)
    least_loaded, send = KafkaConnectionManager.least_loaded_node, KafkaConnectionManager.send
    sent_to_hung = []

    def hung_broker_first(manager: KafkaConnectionManager) -> Any:
        known = {b.node_id for b in manager.cluster.brokers()}
        return hung if hung in known else least_loaded(manager)

    def counted(
        manager: KafkaConnectionManager, request: Any, node_id: Any = None, **kw: Any
    ) -> Any:
        node = node_id if node_id is not None else manager.least_loaded_node()
        if node == hung:
            sent_to_hung.append(type(request).__name__)
        return send(manager, request, node_id=node, **kw)

    try:
        assert hung in read(sources)  # the client is made before the broker hangs
        cluster.pause(hung)
        with monkeypatch.context() as patch:
            patch.setattr(KafkaConnectionManager, "least_loaded_node", hung_broker_first)
            patch.setattr(KafkaConnectionManager, "send", counted)
            for _ in range(2):
                sources._read_admin()  # AdminUnavailable: the cycle would be blind
        assert len(sent_to_hung) == 1, sent_to_hung
    finally:
        sources.stop_admin_clients()
        cluster.resume(hung)
        wait_for(lambda: hung in read_quietly(cluster), timeout=60, what="the hung broker back")


def test_a_hung_broker_does_not_make_the_quorum_look_leaderless(
    healthy_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quorum is read twice before it is called leaderless, the second time on a fresh
    client; that client picked its broker at random, the one the first read had waited on
    now and then, and a broker cut off from the controllers (or hung) made a led quorum look
    leaderless: a refusal (CI, test_network_faults). Made to pick the hung broker whenever it
    may, the second read goes elsewhere and finds the leader."""
    cluster = healthy_cluster
    hung = cluster.broker_ids[-1]
    # Bootstrapped from the others, as a broker cut off from the controllers still answers
    # its metadata (a hung one would not, and a fresh client's bootstrap is another story).
    others = ",".join(
        f"{cluster.broker(b).host}:{cluster.broker(b).port}"
        for b in cluster.broker_ids
        if b != hung
    )
    sources = sources_for(cluster, bootstrap=others)
    least_loaded = KafkaConnectionManager.least_loaded_node

    def hung_broker_first(manager: KafkaConnectionManager) -> Any:
        known = {b.node_id for b in manager.cluster.brokers()}
        return hung if hung in known else least_loaded(manager)

    try:
        assert sources.quorum.read(int(time.time() * 1000)).state == "led"
        cluster.pause(hung)
        with monkeypatch.context() as patch:
            patch.setattr(KafkaConnectionManager, "least_loaded_node", hung_broker_first)
            quorum = sources.quorum.read(int(time.time() * 1000))
        assert quorum.state == "led", quorum
    finally:
        sources.stop_admin_clients()
        cluster.resume(hung)
        wait_for(lambda: hung in read_quietly(cluster), timeout=60, what="the hung broker back")
