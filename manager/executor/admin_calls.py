"""The executor's Admin API client, and how one call survives a dead broker: retried once on
the same client (a broker that just timed out is in its reconnect backoff, so another one
answers: a hung broker, which a fresh client could pick again to bootstrap from), then with a
fresh client, whose new metadata stops pointing at it (kafka-python would otherwise keep its
cached controller for minutes), for up to ``admin_retry_s`` - longer than the broker session
timeout, after which the controller has fenced the dead broker."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection
from typing import Any

from kafka import TopicPartition as KpTopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaConnectionError as KpConnectionError
from kafka.errors import KafkaError as KpKafkaError
from kafka.errors import NodeNotReadyError

from kmedic.errors import KmedicError, LeaseEnded
from kmedic.forwarders import Forwarders
from kmedic.kafka_admin import REACH_MS, connect_admin, describe_partitions, steer_requests
from kmedic.kafka_client import Cluster
from kmedic.kafka_protocol import refusal, unregister_broker
from kmedic.logging import get_logger
from manager.executor.move_state import ClusterView, Election
from manager.model.moves import Move, TopicPartition

log = get_logger(__name__)


def _error_words(exc: Exception) -> str:
    """Kafka's error by name and description (``PreferredLeaderNotAvailableError: ...``)."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def retry_pause(attempt: int, exc: Exception) -> float:
    """Seconds before retry ``attempt + 1``. A broker that refused the connection (a dead one:
    the first call after a broker dies often picks it) is in its reconnect backoff at once, so
    the first retry goes straight to another broker: a heal's first step waited a whole second
    here. Anything else waits a second more per attempt, up to three."""
    if attempt == 1 and isinstance(exc, KpConnectionError | NodeNotReadyError):
        return 0.0
    return min(float(attempt), 3.0)


class AdminCalls:
    """One Admin client of the executor's, replaced whenever a call fails. A client that could
    not be replaced (the cluster unreachable that moment) is connected again by the next call:
    never a closed client kept for the next one."""

    def __init__(
        self,
        bootstrap: Cluster,
        request_timeout_s: float,
        retry_s: float,
        client_id: str = "kmedic-executor",
        may_call: Callable[[], bool] = lambda: True,
        avoided: Forwarders | None = None,
    ) -> None:
        """``avoided``: the brokers a request of this manager waited on and failed lately,
        shared with its other clients (ClusterSources.avoided)."""
        self._bootstrap = bootstrap
        self._client_id = client_id  # names this instance's writes in the brokers' request logs
        # Asked before each attempt: a leader whose lease has ended sends nothing more (a
        # reassignment retried after a broker's death would reach Kafka past the lease).
        self._may_call = may_call
        self._timeout_ms = int(request_timeout_s * 1000)
        self._retry_s = retry_s
        self._client: KafkaAdminClient | None = None
        self._forwarders = avoided if avoided is not None else Forwarders()
        try:  # connected now while the cluster answers (its metadata fresh before any hang)
            self._client = self._connect(reach_ms=REACH_MS)
        except KmedicError as exc:
            # A manager started while Kafka is down must start (and wait, blind), not fail in
            # its constructor: the next call connects. It asks for REACH_MS, not the request
            # timeout: the whole start (its HTTP server, its health) waited 30 s here.
            log.warning("executor_admin_unreachable_at_start", error=str(exc))

    def _connect(self, reach_ms: int | None = None) -> KafkaAdminClient:
        client: KafkaAdminClient = connect_admin(
            self._bootstrap,
            client_id=self._client_id,
            timeout_ms=self._timeout_ms,
            reach_ms=reach_ms,
        )
        # A broker a request waited on and failed is avoided by the requests that name none.
        steer_requests(client, self._forwarders)
        return client

    @property
    def client(self) -> KafkaAdminClient:
        """The client, connected anew if the last one was dropped (KmedicError if it cannot)."""
        if self._client is None:
            self._client = self._connect()
        return self._client

    def __call__(self, call: Callable[[KafkaAdminClient], Any], what: str) -> Any:
        """Run one Admin API call, retried as the module says; KmedicError naming ``what``
        once the retries are spent."""
        deadline = time.monotonic() + self._retry_s
        attempt = 0
        while True:
            attempt += 1
            if not self._may_call():
                raise LeaseEnded(
                    f"cannot {what}: this instance may no longer act (its lease ended)"
                )
            try:
                return call(self._steered(self.client))
            except (KpKafkaError, KmedicError) as exc:  # KmedicError: could not reconnect
                if self._client is not None:
                    self._forwarders.failed(self._client._controller_id, time.monotonic())
                if time.monotonic() >= deadline:
                    raise KmedicError(f"cannot {what}: {exc!r}") from exc
                log.warning("admin_call_retry", call=what, attempt=attempt, error=repr(exc))
                time.sleep(retry_pause(attempt, exc))
                if attempt == 1 and self._client is not None:
                    # The same client first: it avoids a broker that just timed out. Controller
                    # requests go to a broker that answers (KRaft brokers forward them):
                    # kafka-python would keep sending them to a hung one, and asked anew
                    # KRaft names a random broker - the hung one again, one time in N - and
                    # its own pick may be a broker cut off from the controllers
                    # (kmedic.forwarders).
                    client = self._client
                    known = [b.node_id for b in client._manager.cluster.brokers()]
                    client._controller_id = self._forwarders.pick(
                        known, client._manager.least_loaded_node(), time.monotonic()
                    )
                    continue
                self._drop()

    def _steered(self, client: KafkaAdminClient) -> KafkaAdminClient:
        """``client``, its controller requests sent to a broker this manager does not avoid:
        the broker KRaft named its "controller" (a random one) may have been fenced since, or
        waited on - a host cut off the network held the first heal's reassignment listing
        for the whole 30 s request timeout (bench_oracle, cut_host)."""
        now = time.monotonic()
        named = client._controller_id
        if isinstance(named, int) and self._forwarders.avoids(named, now):
            known = [b.node_id for b in client._manager.cluster.brokers()]
            client._controller_id = self._forwarders.pick(
                known, client._manager.least_loaded_node(), now
            )
        return client

    def once(self, call: Callable[[KafkaAdminClient], Any], what: str) -> Any:
        """An Admin API call only one broker answers (its own configs), tried once:
        KmedicError naming ``what`` if it fails. Retried, it would wait on that same broker -
        one cut off from the manager held a whole cycle for half a minute; the caller asks
        again on its next step."""
        if not self._may_call():
            raise LeaseEnded(f"cannot {what}: this instance may no longer act (its lease ended)")
        try:
            return call(self.client)
        except (KpKafkaError, KmedicError) as exc:
            raise KmedicError(f"cannot {what}: {exc!r}") from exc

    def _drop(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
        self._client = None

    def elect_preferred(self, move: Move, isr: tuple[int, ...]) -> Election:
        """A preferred leader election for the moved partition, asked only when its preferred
        leader is in the ISR (Kafka would refuse it). Kafka taking the request is not proof
        that the broker leads: the executor checks that on its next read."""
        preferred = move.target[0]
        if preferred not in isr:
            return Election(False, f"not asked: broker {preferred} is not in the ISR {list(isr)}")
        try:
            self.client.elect_leaders(
                0,  # preferred; ElectionNotNeeded (it leads already) is not raised
                {move.topic: [move.partition]},
                timeout_ms=self._timeout_ms,
            )
        except (KpKafkaError, KmedicError) as exc:
            log.warning("preferred_election_failed", partition=move.key, error=repr(exc))
            return Election(False, f"the election failed: {_error_words(exc)}")
        return Election(True, f"election of broker {preferred} asked")

    def reassign(
        self, targets: dict[TopicPartition, list[int] | None], what: str
    ) -> dict[TopicPartition, str]:
        """Start (a target) or cancel (None) reassignments; Kafka's error for each refused."""
        request = {KpTopicPartition(t, p): v for (t, p), v in targets.items()}
        result = self(
            lambda kp: kp.alter_partition_reassignments(request, timeout_ms=self._timeout_ms),
            what,
        )
        return {
            (tp.topic, tp.partition): getattr(err, "__name__", str(err))
            for tp, err in result.items()
            if err is not None
        }

    def unregister_broker(self, broker_id: int) -> None:
        """Remove a stopped broker's registration (UnregisterBroker); KmedicError when Kafka
        refuses, with its reason."""
        code, message = self(lambda kp: unregister_broker(kp, broker_id), f"unregister {broker_id}")
        why = refusal(broker_id, code, message)
        if why is not None:
            raise KmedicError(why)

    def close(self) -> None:
        self._drop()


def read_view(calls: AdminCalls, topics: Collection[str]) -> ClusterView:
    """The one read of the cluster a step judges its moves by: the replicas, leaders and
    in-sync replicas of ``topics`` (those of the moves it runs: a Metadata request naming
    them, decoded as the monitor decodes the whole cluster's), live brokers (registered and
    not fenced), ongoing reassignments."""
    table = (
        calls(lambda kp: describe_partitions(kp, sorted(topics)), "describe topics")
        if topics
        else None
    )
    cluster = calls(lambda kp: kp.describe_cluster(), "describe the cluster")
    ongoing_raw = calls(
        lambda kp: kp.list_partition_reassignments(), "list partition reassignments"
    )
    replicas: dict[TopicPartition, tuple[int, ...]] = {}
    leaders: dict[TopicPartition, int] = {}
    isr: dict[TopicPartition, tuple[int, ...]] = {}
    for part in table or ():
        tp = (part.topic, part.partition)
        replicas[tp] = part.replicas
        leaders[tp] = part.leader
        isr[tp] = part.isr
    live = frozenset(
        int(b["broker_id"]) for b in cluster["brokers"] if not b.get("is_fenced", False)
    )
    ongoing = {(tp.topic, tp.partition): dict(info) for tp, info in ongoing_raw.items()}
    return ClusterView(replicas, leaders, live, ongoing, isr)
