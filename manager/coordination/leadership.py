"""Leader election, fencing epoch and the in-flight plan, kept in ZooKeeper through kazoo.

One manager instance per Kafka cluster acts; the others are hot standbys. Under
``<root>/<cluster>/manager`` (besides the operators' requests, mode and switches): ``leader``,
ephemeral JSON ``{instance, epoch, session}``, whoever creates it leads; ``epoch``, a counter
bumped with compare-and-set on every acquisition, the fencing epoch every action and audit
record carries; ``plan`` (plan_store) and ``cordons`` (cordon_ledger), each written in one
transaction that checks the ``epoch`` znode's version (:meth:`fenced_commit`), so a stale
leader can never overwrite them. A write as leader also asks the lease (``lease_left_s``).

Session expiry follows the policy ``reconnect`` (default) or ``shutdown``. With ``reconnect``,
after a new session starts the instance takes leadership back only if nobody else took it
meanwhile (the epoch counter did not move); otherwise it becomes a standby and tells its owner to
drop in-flight decisions. kazoo gives up after ``max_reconnect_tries`` failed connection
attempts; the instance then shuts down. While ZooKeeper is unreachable ``may_act()`` is False.
Callbacks run on the coordinator's supervisor thread, never on kazoo's event thread.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient, KazooState, KeeperState
from kazoo.exceptions import KazooException, NodeExistsError, ZookeeperError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from kmedic.logging import get_logger
from manager.coordination.acls import fix_tree, kazoo_security, tree_problems
from manager.coordination.connection import CoordinationConfig, default_instance_id
from manager.coordination.cordon_ledger import CordonLedger
from manager.coordination.epoch import bump_epoch, commit_fenced, read_epoch
from manager.coordination.fenced import FencedError
from manager.coordination.lease import Lease
from manager.coordination.plan_store import PlanStore
from manager.coordination.request_store import RequestStore
from manager.coordination.state import CoordinationState, read_state
from manager.coordination.znodes import (
    CoordinationError,
    LeaderRecord,
    ZooKeeperUnreachable,
    decode_json,
    manager_path,
    parse_leader,
    read_znode,
)

# Re-exported: where callers have always found them.
__all__ = ["CoordinationConfig", "Coordinator", "FencedError", "default_instance_id"]

log = get_logger(__name__)


class Coordinator:
    """Leadership and fencing for one manager instance of one Kafka cluster."""

    def __init__(
        self,
        config: CoordinationConfig,
        cluster: str,
        instance_id: str | None = None,
        *,
        on_leadership_acquired: Callable[[int], None] | None = None,
        on_leadership_lost: Callable[[str], None] | None = None,
        on_shutdown: Callable[[str], None] | None = None,
        reconcile_interval_s: float = 0.5,
    ) -> None:
        self.config = config
        self.cluster = cluster
        self.instance_id = instance_id or default_instance_id()
        base = manager_path(config.root, cluster)
        self.leader_path = f"{base}/leader"
        self.epoch_path = f"{base}/epoch"
        self.plans = PlanStore(self, f"{base}/plan")
        self.requests = RequestStore(self, base)
        self.cordon_ledger = CordonLedger(self, base)  # the cordons kmedic wrote
        self._on_acquired, self._on_lost = on_leadership_acquired, on_leadership_lost
        self._on_shutdown = on_shutdown
        self._interval = reconcile_interval_s
        retry = KazooRetry(
            max_tries=config.max_reconnect_tries,
            delay=config.reconnect_delay_s,
            max_delay=config.reconnect_max_delay_s,
            ignore_expire=False,
        )
        self._client = KazooClient(
            hosts=config.zk_connect,
            timeout=config.session_timeout_s,
            connection_retry=retry,
            command_retry={"max_tries": 3, "delay": 0.2, "max_delay": 1.0},
            **kazoo_security(config.auth),
        )
        self._events: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._leader_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False
        self._connected = False
        self._is_leader = False
        # The last fencing token this instance held; kept after losing leadership so that a
        # stale write is rejected by ZooKeeper itself, not only by a local flag.
        self._epoch = 0
        self._epoch_version = -1
        self._pending_reacquire: int | None = None
        self._shutdown_reason: str | None = None
        # The session that owns the leader znode this instance holds, read from the znode's
        # own stat: kazoo's ``client_id`` reads None the moment a connection drops, and a
        # leader that compared against it would resign over a drop its session outlives.
        self._held_session: int | None = None
        # Renewed by each answered leader check (manager.coordination.lease).
        self._lease = Lease(config.session_timeout_s)

    def acl_problems(self) -> dict[str, str]:
        """kmedic's znodes whose ACL is not kmedic's, with what they have (none without auth)."""
        return tree_problems(self._client, self.config.root, self.cluster, self.config.auth)

    def fix_acls(self) -> list[str]:
        return fix_tree(self._client, self.config.root, self.cluster, self.config.auth)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self, timeout_s: float = 15.0) -> None:
        """Connect, create the znode layout and start competing for leadership."""
        try:
            self._client.start(timeout=timeout_s)
        except KazooTimeoutError as exc:
            # kazoo stopped the client: the manager may start it again, ``stop`` closes it.
            raise ZooKeeperUnreachable(
                f"cannot connect to ZooKeeper at {self.config.zk_connect} within {timeout_s}s"
            ) from exc
        self._client.add_listener(self._on_state)
        self._connected = True
        self._started = True
        self._client.ensure_path(self.epoch_path)
        if self.config.auth is not None:
            wrong = self.acl_problems()
            if wrong:
                # Reported, not changed: who else relies on these znodes is the operator's call.
                log.warning("zookeeper_acls_not_kmedics", znodes=wrong, count=len(wrong))
        self._thread = threading.Thread(
            target=self._run, name=f"kmedic-coordination-{self.instance_id}", daemon=True
        )
        self._thread.start()
        self._events.put("start")

    def stop(self) -> None:
        """Resign (delete our leader znode so a standby takes over at once) and disconnect."""
        self._stop.set()
        self._events.put("stop")
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)
        if self._is_leader and self._connected:
            self._release_leader_node()
        self._set_leader(False)
        try:
            self._client.stop()
        finally:
            self._client.close()

    # -- state -----------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self._is_leader

    @property
    def epoch(self) -> int:
        """The fencing epoch this instance holds (or last held)."""
        return self._epoch

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def shutdown_reason(self) -> str | None:
        """Why the instance gave up (session expired under `shutdown`, or retries exhausted)."""
        return self._shutdown_reason

    def may_act(self) -> bool:
        """True only while connected, leading with an epoch and a lease, not shut down."""
        return self.lease_left_s() > 0

    def lease_left_s(self) -> float:
        """Seconds this instance may still write as leader (0: none), what such a write
        bounds its wait by: nothing it sends arrives after its session could have expired."""
        held = self._connected and self._is_leader and self._epoch_version >= 0
        if not held or self._shutdown_reason is not None:
            return 0.0
        return self._lease.left(time.monotonic())

    def wait_until_leader(self, timeout_s: float) -> bool:
        return self._leader_event.wait(timeout_s) and self.may_act()

    def session_id(self) -> int | None:
        cid = self._client.client_id
        return int(cid[0]) if cid else None

    def watch(
        self,
        *,
        on_leadership_acquired: Callable[[int], None] | None = None,
        on_leadership_lost: Callable[[str], None] | None = None,
        on_shutdown: Callable[[str], None] | None = None,
    ) -> None:
        """Set the callbacks (run on the supervisor thread); for owners built after this."""
        self._on_acquired = on_leadership_acquired
        self._on_lost = on_leadership_lost
        self._on_shutdown = on_shutdown

    # -- reads -----------------------------------------------------------------------------

    def read_state(self) -> CoordinationState:
        """The placement config, the in-flight plan and the current epoch, on this
        instance's own session: what one cycle needs, read once."""
        return read_state(self._client, self.cluster, self.config.root)

    def current_leader(self) -> LeaderRecord | None:
        """The leader znode's record, or None when nobody leads."""
        found = read_znode(self._client, self.leader_path)
        return None if found is None else parse_leader(found[0], self.leader_path)

    def current_epoch(self) -> int:
        """The epoch counter as stored in ZooKeeper (the newest leadership's epoch)."""
        return read_epoch(self._client, self.epoch_path)[0]

    def verify_leadership(self) -> bool:
        """Ask ZooKeeper whether this instance still leads with its epoch (one round trip)."""
        if not self.may_act():
            return False
        try:
            stat = self._client.exists(self.leader_path)
            counter, _ = read_epoch(self._client, self.epoch_path)
        except (KazooException, KazooTimeoutError, CoordinationError):
            return False
        return (
            stat is not None and stat.ephemeralOwner == self.session_id() and counter == self._epoch
        )

    def get_json(self, path: str) -> tuple[dict[str, Any], Any] | None:
        """A znode's JSON object and its stat, or None when the znode does not exist."""
        found = read_znode(self._client, path)
        return None if found is None else (decode_json(found[0], path), found[1])

    def fenced_commit(self, add_op: Callable[[Any], Any], what: str) -> list[Any]:
        """Run ``add_op``'s writes in one ZooKeeper transaction that also checks the epoch
        has not moved since this instance acquired leadership. A stale leader gets
        FencedError. Returns the transaction's results: ``[epoch check, add_op's ops...]``,
        each a result or the exception that failed it."""
        if self._epoch_version < 0:
            raise FencedError(f"instance {self.instance_id} never held leadership: cannot {what}")
        if self._shutdown_reason is not None:
            raise FencedError(f"instance {self.instance_id} has shut down: cannot {what}")
        held = (self._epoch, self._epoch_version)
        return commit_fenced(self._client, self.epoch_path, held, add_op, what, self.instance_id)

    # -- supervisor ------------------------------------------------------------------------

    def _on_state(self, state: str) -> None:
        # Runs on kazoo's thread: record facts and hand work to the supervisor, never block.
        self._connected = state == KazooState.CONNECTED
        if state == KazooState.LOST and self._is_leader:
            self._pending_reacquire = self._epoch
            self._set_leader(False)
        self._events.put(str(state))

    def _run(self) -> None:
        while not self._stop.is_set() and self._shutdown_reason is None:
            try:
                event = self._events.get(timeout=self._interval)
            except queue.Empty:
                event = "tick"
            if self._stop.is_set():
                return
            try:
                self._handle(event)
            except (KazooException, KazooTimeoutError, CoordinationError, ZookeeperError) as exc:
                log.warning("coordination_step_failed", trigger=event, error=repr(exc))

    def _handle(self, event: str) -> None:
        if event == KazooState.LOST:
            if self._pending_reacquire is not None:
                log.warning("leadership_session_lost", epoch=self._pending_reacquire)
            if self.config.session_expired_policy == "shutdown":
                self._shutdown("ZooKeeper session lost and the policy is `shutdown`")
                return
        if self._client.client_state == KeeperState.CLOSED and not self._stop.is_set():
            self._shutdown(
                f"gave up reconnecting to ZooKeeper after {self.config.max_reconnect_tries} tries"
            )
            return
        if not self._connected:
            return
        self._reconcile()

    def _reconcile(self) -> None:
        if self._pending_reacquire is not None:
            lost_epoch = self._pending_reacquire
            counter, _ = read_epoch(self._client, self.epoch_path)
            holder = self._client.exists(self.leader_path)
            self._pending_reacquire = None
            if counter == lost_epoch and holder is None:
                log.info("leadership_reacquiring", epoch=lost_epoch)
                self._try_acquire()
            else:
                self._lost(f"another instance took leadership (epoch {counter}) during the outage")
            return
        if self._is_leader:
            sent = time.monotonic()
            stat = self._client.exists(self.leader_path)
            if stat is None or stat.ephemeralOwner != self._held_session:
                self._lost("the leader znode was deleted or taken over")
            else:
                self._lease.renew(sent)
            return
        self._try_acquire()

    def _try_acquire(self) -> None:
        sent = time.monotonic()
        try:
            _, created = self._client.create(
                self.leader_path,
                self._leader_payload(None, self.session_id()),
                ephemeral=True,
                makepath=True,
                include_data=True,
            )
            owner = created.ephemeralOwner
        except NodeExistsError:
            # Wake up as soon as the leader goes away instead of waiting for the next tick.
            stat = self._client.exists(
                self.leader_path, watch=lambda _e: self._events.put("leader")
            )
            if stat is None or stat.ephemeralOwner != self.session_id():
                return
            owner = stat.ephemeralOwner
            # This session's own znode: an acquisition cut off after the create (its reply
            # lost to a connection drop, or the epoch bump and the release both failed). Left
            # alone it names a leader that never leads; finished, it does.
            log.warning("leadership_acquisition_resumed", instance=self.instance_id)
        try:
            epoch, version = bump_epoch(self._client, self.epoch_path)
            self._client.set(self.leader_path, self._leader_payload(epoch, owner))
        except Exception:
            self._release_leader_node()
            raise
        with self._lock:
            self._epoch, self._epoch_version = epoch, version
            self._held_session = owner
        self._lease.renew(sent)
        self._set_leader(True)
        log.info("leadership_acquired", instance=self.instance_id, epoch=epoch)
        if self._on_acquired is not None:
            self._on_acquired(epoch)

    def _leader_payload(self, epoch: int | None, session: int | None) -> bytes:
        return LeaderRecord(instance=self.instance_id, epoch=epoch, session=session).to_bytes()

    def _release_leader_node(self) -> None:
        try:
            stat = self._client.exists(self.leader_path)
            if stat is not None and stat.ephemeralOwner == self.session_id():
                self._client.delete(self.leader_path, version=stat.version)
        except (KazooException, KazooTimeoutError) as exc:
            log.warning("leader_release_failed", error=repr(exc))

    def _set_leader(self, leading: bool) -> None:
        self._is_leader = leading
        if leading:
            self._leader_event.set()
        else:
            self._lease.end()
            self._leader_event.clear()

    def _lost(self, reason: str) -> None:
        self._set_leader(False)
        log.warning("leadership_lost", instance=self.instance_id, epoch=self._epoch, reason=reason)
        if self._on_lost is not None:
            self._on_lost(reason)

    def _shutdown(self, reason: str) -> None:
        was_leader = self._is_leader or self._pending_reacquire is not None
        self._shutdown_reason = reason
        self._pending_reacquire = None
        self._set_leader(False)
        log.error("coordination_shutdown", instance=self.instance_id, reason=reason)
        if was_leader and self._on_lost is not None:
            self._on_lost(reason)
        if self._on_shutdown is not None:
            self._on_shutdown(reason)
        try:
            self._client.stop()
        except (KazooException, KazooTimeoutError) as exc:
            log.warning("coordination_stop_failed", error=repr(exc))
