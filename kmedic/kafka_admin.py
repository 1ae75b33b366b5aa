"""One way to open kafka-python's admin client (the calls confluent-kafka lacks:
reassignments, log dirs), with its many error types turned into one clear KmedicError.

kafka-python starts the client's network thread before it bootstraps, and a bootstrap that
fails leaves that thread running with no client to close it; a manager that cannot reach its
cluster for an hour would collect one thread per attempt. So a client that fails to start is
closed here before the error is raised."""

from __future__ import annotations

import contextlib
import functools
import time
from dataclasses import dataclass
from typing import Any

from kmedic import own_topics
from kmedic.errors import KmedicError, Unreachable
from kmedic.forwarders import Forwarders
from kmedic.kafka_client import Cluster, client_settings
from kmedic.metadata import LogDirInfo, log_dir_of
from kmedic.metadata_wire import decode_metadata
from kmedic.partition_table import PartitionTable


@functools.cache
def _client_class() -> Any:
    """KafkaAdminClient, closed when its start fails (imported late: kafka-python is slow to
    import and most commands never need it)."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    class ClosedOnFailure(KafkaAdminClient):  # type: ignore[misc]
        async def _refresh_controller_id(self, timeout_ms: int = 30000) -> int:
            """The broker that takes controller requests, from a Metadata request naming no
            topic: kafka-python's own asks for every partition of the cluster (2 s and
            hundreds of MB at 433,000 partitions) to read one field of the answer."""
            from kafka.protocol.metadata import MetadataRequest

            request = MetadataRequest(topics=MetadataRequest.NO_TOPICS)
            deadline = time.monotonic() + timeout_ms / 1000
            while time.monotonic() < deadline:
                response = await self._manager.send(request)
                if response.controller_id != -1:
                    return int(response.controller_id)
                await self._net.sleep(1)
            raise KafkaError("no broker named a controller")

        def __init__(self, **config: Any) -> None:
            try:
                super().__init__(**config)
            except BaseException:
                # close() skips a client it thinks was never opened (no ``_closed`` yet).
                if hasattr(self, "_net"):
                    self._closed = False
                    with contextlib.suppress(Exception):  # the start's error is the one to report
                        self.close()
                raise

    return ClosedOnFailure


# A request that failed after this long waited on its broker (a request or connection timeout):
# a refused connection (a dead broker) fails within milliseconds, and kafka-python's own
# reconnect backoff skips that broker already.
WAITED_S = 1.0


def steer_requests(client: Any, avoided: Forwarders, clock: Any = time.monotonic) -> None:
    """Make ``client`` (a KafkaAdminClient) send a request that names no broker to one
    ``avoided`` does not avoid (kmedic.forwarders), and tell ``avoided`` of every broker a
    request failed on after waiting ``WAITED_S`` or more. kafka-python picks such a broker at
    random for each request: a hung broker (a long GC pause), or one the manager cannot reach,
    swallows requests until they time out, and took its share of every read of a cycle,
    retries included. Instead of an avoided broker: one kafka-python is connected to, else one
    not in its reconnect backoff (never a dead broker it has just failed to reach), else
    kafka-python's own choice."""
    manager = client._manager

    def least_loaded_node() -> Any:
        preferred = type(manager).least_loaded_node(manager)  # kafka-python's own choice
        now = clock()
        if preferred is None or not avoided.avoids(preferred, now):
            return preferred  # None: every broker is in its reconnect backoff
        known = sorted(b.node_id for b in manager.cluster.brokers() if isinstance(b.node_id, int))
        usable = [b for b in known if not avoided.avoids(b, now)]
        usable = [b for b in usable if manager.connection_delay(b) <= 0]
        connected = [b for b in usable if getattr(manager._conns.get(b), "connected", False)]
        return (connected or usable or [preferred])[0]

    def send(request: Any, node_id: Any = None, request_timeout_ms: Any = None) -> Any:
        node = node_id if node_id is not None else least_loaded_node()
        sent = clock()
        future = type(manager).send(
            manager, request, node_id=node, request_timeout_ms=request_timeout_ms
        )

        def waited(_: BaseException) -> None:
            if isinstance(node, int) and clock() - sent >= WAITED_S:
                avoided.failed(node, clock())

        future.add_errback(waited)
        return future

    manager.least_loaded_node = least_loaded_node
    manager.send = send


# How long a command waits for a first answer from an unreachable cluster before it says so
# (its requests, once connected, have their own timeout).
REACH_MS = 5_000


def connect_admin(
    cluster: Cluster,
    *,
    client_id: str,
    timeout_ms: int,
    error: type[KmedicError] = Unreachable,
    reach_ms: int | None = None,
) -> Any:
    """A connected KafkaAdminClient, or ``error`` naming the cluster that could not be reached
    within ``reach_ms`` (default: ``timeout_ms``, the requests' timeout)."""
    settings = client_settings(cluster)
    bootstrap = settings.bootstrap
    try:
        # The bootstrap bound matters when every broker is down: its default is 30 s.
        return _client_class()(
            **settings.kafka_python(),
            client_id=client_id,
            request_timeout_ms=timeout_ms,
            bootstrap_timeout_ms=timeout_ms if reach_ms is None else reach_ms,
        )
    except Exception as exc:  # kafka-python raises several unrelated types
        raise error(f"cannot reach the cluster at {bootstrap}: {exc}") from exc


MIN_INSYNC = own_topics.MIN_INSYNC


def describe_min_insync(client: Any, topics: list[str]) -> dict[str, int]:
    """Each topic's effective ``min.insync.replicas`` (its own, else the broker default), by
    DescribeConfigs on ``client``; a topic Kafka gives no value for (just created, deleted) is
    absent. Raises what the client raises."""
    from kafka.admin import ConfigResource, ConfigResourceType

    resources = [
        ConfigResource(ConfigResourceType.TOPIC, t, configs={MIN_INSYNC: None}) for t in topics
    ]
    found = client.describe_configs(resources, config_filter="all")
    out = {}
    for name, entries in found.get("topic", {}).items():
        value = entries.get(MIN_INSYNC, {}).get("value") if isinstance(entries, dict) else None
        if isinstance(value, str) and value.isdigit() and int(value) >= 1:
            out[str(name)] = int(value)
    return out


QUOTA_WINDOW_NUM = "replication.quota.window.num"
QUOTA_WINDOW_SIZE = "replication.quota.window.size.seconds"
FETCH_BACKOFF = "replica.fetch.backoff.ms"
FETCH_WAIT = "replica.fetch.wait.max.ms"


@dataclass(frozen=True)
class ReplicationTiming:
    """A broker's static settings that shape how its throttled copies end: the seconds it
    measures a replication throttle over, and how long its followers wait after a refused
    fetch (None: Kafka gave no value)."""

    quota_window_s: float | None
    fetch_backoff_ms: int | None
    fetch_wait_ms: int | None = None  # replica.fetch.wait.max.ms


def describe_replication_timings(client: Any, brokers: list[int]) -> dict[int, ReplicationTiming]:
    """Each broker's ``ReplicationTiming`` (its quota window is ``replication.quota.window.num``
    samples of ``replication.quota.window.size.seconds``), by DescribeConfigs on ``client``; a
    broker Kafka gives no values for is absent. Raises what the client raises."""
    from kafka.admin import ConfigResource, ConfigResourceType

    keys = {QUOTA_WINDOW_NUM: None, QUOTA_WINDOW_SIZE: None, FETCH_BACKOFF: None, FETCH_WAIT: None}
    resources = [
        ConfigResource(ConfigResourceType.BROKER, str(b), configs=dict(keys)) for b in brokers
    ]
    found = client.describe_configs(resources, config_filter="all")
    out = {}
    for name, entries in found.get("broker", {}).items():
        if not isinstance(entries, dict):
            continue
        num, size, backoff, wait = (
            entries.get(k, {}).get("value")
            for k in (QUOTA_WINDOW_NUM, QUOTA_WINDOW_SIZE, FETCH_BACKOFF, FETCH_WAIT)
        )
        samples, seconds = _digits(num), _digits(size)
        window = float(samples * seconds) if samples and seconds else None
        out[int(name)] = ReplicationTiming(window, _digits(backoff), _digits(wait))
    return {b: t for b, t in out.items() if t != ReplicationTiming(None, None, None)}


def _digits(value: Any) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None


AUTO_LEADER_REBALANCE = "auto.leader.rebalance.enable"


def describe_auto_leader_rebalance(client: Any, broker: int) -> bool | None:
    """Whether ``broker`` runs Kafka's own preferred-leader rebalancing
    (``auto.leader.rebalance.enable``, its value or the default), by DescribeConfigs on
    ``client``; None when Kafka gives no value. Raises what the client raises."""
    from kafka.admin import ConfigResource, ConfigResourceType

    resource = ConfigResource(
        ConfigResourceType.BROKER, str(broker), configs={AUTO_LEADER_REBALANCE: None}
    )
    found = client.describe_configs([resource], config_filter="all")
    for entries in found.get("broker", {}).values():
        if not isinstance(entries, dict):
            continue
        value = entries.get(AUTO_LEADER_REBALANCE, {}).get("value")
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
    return None


def describe_partitions(client: Any, topics: list[str] | None = None) -> PartitionTable:
    """Every partition of the cluster (or of ``topics``), from one Metadata request on
    ``client``, decoded straight into columns by ``kmedic.metadata_wire``: kafka-python's own
    decoding of the answer took 2 s of a cycle at 433,000 partitions (docs/bench.md, "cycle").
    Raises what the client raises."""
    request = _TableRequest(metadata_request(topics))

    async def send() -> Any:
        return await client._manager.send(request)

    # Decoded here, in the caller's thread, not in kafka-python's I/O loop: at 433,000
    # partitions the decode held the loop for a quarter of a second (seconds on a busy
    # machine), which kafka-python logs as a warning every cycle and which times out every
    # other request waiting on that loop.
    answer: _RawAnswer = client._manager.run(send)
    return decode_metadata(answer.data, answer.version).table


def describe_broker_log_dirs(client: Any, broker_id: int) -> list[LogDirInfo]:
    """Every log directory of ``broker_id``, by one DescribeLogDirs request sent to that
    broker (topics null: all of its partitions), summed as it is read. kafka-python's
    ``describe_log_dirs`` names every partition of the cluster in its request, so it first
    reads the whole cluster's Metadata: 4.6 s of CPU at 433,000 partitions (docs/bench.md,
    "agent"). Raises what the client raises."""
    return [log_dir_of(result) for result in _log_dirs(client, broker_id)]


def _log_dirs(client: Any, broker_id: int) -> Any:
    """The results of one DescribeLogDirs request (topics null: all) sent to ``broker_id``."""
    from kafka.protocol.admin import DescribeLogDirsRequest

    request = DescribeLogDirsRequest(topics=None)

    async def send() -> Any:
        return await client._manager.send(request, node_id=broker_id)

    return client._manager.run(send).results


def describe_replica_sizes(client: Any, broker_id: int) -> dict[tuple[str, int], int]:
    """The bytes of each replica ``broker_id`` holds (its current ones: a replica moving
    between its log directories counted once), by one DescribeLogDirs request sent to it.
    Kafka's own figure: a partition directory deleted while it is read does not fail it, as a
    walk of the data directory did (a benchmark's, while a reassignment finished)."""
    sizes: dict[tuple[str, int], int] = {}
    for result in _log_dirs(client, broker_id):
        for topic in result.topics:
            for p in topic.partitions:
                if not p.is_future_key:
                    key = (str(topic.name), int(p.partition_index))
                    sizes[key] = sizes.get(key, 0) + int(p.partition_size)
    return sizes


def metadata_request(topics: list[str] | None) -> Any:
    """A Metadata request for ``topics`` (None: every topic; []: none, brokers only)."""
    from kafka.protocol.metadata import MetadataRequest

    named = (
        None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in topics]
    )
    return MetadataRequest(topics=named, allow_auto_topic_creation=False)


class _TableRequest:
    """A Metadata request whose answer is decoded by ``decode_metadata``: kafka-python picks a
    response's decoder from the header of the request in flight, so this request hands out a
    header that names its own (no global registry is touched; other Metadata requests on the
    same client decode as before). Everything else is the wrapped request's."""

    def __init__(self, request: Any) -> None:
        object.__setattr__(self, "_request", request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._request, name, value)

    @property
    def header(self) -> Any:
        return _TableHeader(self._request.header)


class _TableHeader:
    def __init__(self, header: Any) -> None:
        self._header = header

    def __getattr__(self, name: str) -> Any:
        return getattr(self._header, name)

    def get_response_class(self) -> Any:
        return _TableResponse(int(self._header.request_api_version))


class _TableResponse:
    """What kafka-python's parser asks of a response type: read the header, decode the rest."""

    def __init__(self, version: int) -> None:
        self.version = version

    def parse_header(self, data: Any) -> Any:
        from kafka.protocol.metadata import MetadataResponse

        return MetadataResponse[self.version].parse_header(data)

    def decode(self, data: Any) -> _RawAnswer:
        return _RawAnswer(data.read(), self.version)


class _RawAnswer:
    """A Metadata answer's body, undecoded, as the I/O loop hands it over."""

    def __init__(self, data: bytes, version: int) -> None:
        self.data, self.version = data, version


def describe_eligible_leaders(
    client: Any, topics: list[str], page: int = 2000
) -> dict[tuple[str, int], tuple[int, ...]]:
    """The eligible leader replicas (KIP-966) of each partition of ``topics`` that has any,
    by DescribeTopicPartitions on ``client`` (a page of ``page`` partitions per request). A
    cluster without ELR (Kafka before 4.1, or the feature off) answers with none. Raises what
    the client raises."""
    from kafka.protocol.admin import DescribeTopicPartitionsRequest

    wanted = [DescribeTopicPartitionsRequest.TopicRequest(name=t) for t in topics]
    out: dict[tuple[str, int], tuple[int, ...]] = {}
    cursor: Any = None
    while True:
        request = DescribeTopicPartitionsRequest(
            topics=wanted, response_partition_limit=page, cursor=cursor
        )

        async def send(request: Any = request) -> Any:
            return await client._manager.send(request)

        response = client._manager.run(send)
        for topic in response.topics:
            for part in topic.partitions:
                if part.eligible_leader_replicas:
                    key = (str(topic.name), int(part.partition_index))
                    out[key] = tuple(int(b) for b in part.eligible_leader_replicas)
        following = response.next_cursor
        if following is None:
            return out
        cursor = DescribeTopicPartitionsRequest.Cursor(
            topic_name=following.topic_name, partition_index=following.partition_index
        )
