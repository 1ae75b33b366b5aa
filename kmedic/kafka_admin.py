"""One way to open kafka-python's admin client (the calls confluent-kafka lacks:
reassignments, log dirs), with its many error types turned into one clear KmedicError.

kafka-python starts the client's network thread before it bootstraps, and a bootstrap that
fails leaves that thread running with no client to close it; a manager that cannot reach its
cluster for an hour would collect one thread per attempt. So a client that fails to start is
closed here before the error is raised."""

from __future__ import annotations

import contextlib
import functools
from typing import Any

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster, client_settings
from kmedic.metadata import PartitionInfo, partitions_of


@functools.cache
def _client_class() -> Any:
    """KafkaAdminClient, closed when its start fails (imported late: kafka-python is slow to
    import and most commands never need it)."""
    from kafka import KafkaAdminClient

    class ClosedOnFailure(KafkaAdminClient):  # type: ignore[misc]
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


def connect_admin(
    cluster: Cluster,
    *,
    client_id: str,
    timeout_ms: int,
    error: type[KmedicError] = KmedicError,
) -> Any:
    """A connected KafkaAdminClient, or ``error`` naming the cluster that could not be reached."""
    settings = client_settings(cluster)
    bootstrap = settings.bootstrap
    try:
        # The bootstrap bound matters when every broker is down: its default is 30 s.
        return _client_class()(
            **settings.kafka_python(),
            client_id=client_id,
            request_timeout_ms=timeout_ms,
            bootstrap_timeout_ms=timeout_ms,
        )
    except Exception as exc:  # kafka-python raises several unrelated types
        raise error(f"cannot reach the cluster at {bootstrap}: {exc}") from exc


MIN_INSYNC = "min.insync.replicas"


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


def describe_partitions(client: Any) -> list[PartitionInfo]:
    """Every partition of the cluster, from one Metadata request on ``client``, parsed from
    kafka-python's response objects. Its ``describe_topics`` turns the answer into dicts first:
    at 433,000 partitions that alone takes 2.3 s of a cycle (docs/bench.md, "cycle"). Raises
    what the client raises."""
    from kafka.protocol.metadata import MetadataRequest

    request = MetadataRequest(topics=None, allow_auto_topic_creation=False)

    async def send() -> Any:
        return await client._manager.send(request)

    return partitions_of(client._manager.run(send))


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
