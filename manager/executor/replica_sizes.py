"""How many bytes the adding replicas of running moves hold: the progress watchdog's samples.

One DescribeLogDirs request per destination broker, naming only the partitions moving to it,
on a client of its own with a short timeout: a broker that hangs (a stopped JVM, a hung disk)
costs one timeout and answers None - which the watchdog counts as no progress - and never
holds up the other brokers' samples or the executor's own Admin calls.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from kafka.admin import KafkaAdminClient

from kmedic.kafka_admin import connect_admin
from kmedic.kafka_client import Cluster
from kmedic.logging import get_logger
from manager.model.moves import TopicPartition

log = get_logger(__name__)

Sample = dict[tuple[TopicPartition, int], int | None]


def sizes_on(result: Iterable[Mapping[str, Any]], broker: int) -> dict[TopicPartition, int]:
    """The partition sizes one broker reported (future replicas - a move between its own log
    directories - left out), from kafka-python's ``describe_log_dirs`` answer."""
    sizes: dict[TopicPartition, int] = {}
    for entry in result:
        if int(entry.get("broker", -1)) != broker:
            continue
        for log_dir in entry.get("log_dirs", []):
            for topic in log_dir.get("topics", []):
                for part in topic.get("partitions", []):
                    if part.get("is_future_key", False):
                        continue
                    tp = (str(topic["name"]), int(part["partition_index"]))
                    sizes[tp] = sizes.get(tp, 0) + int(part["partition_size"])
    return sizes


class ReplicaSizes:
    """Samples the sizes of replicas being added; one client, replaced after a failure."""

    def __init__(self, bootstrap: Cluster, timeout_s: float) -> None:
        self._bootstrap = bootstrap
        self._timeout_ms = int(timeout_s * 1000)
        self._client: KafkaAdminClient | None = None

    def __call__(self, adding: Mapping[int, Iterable[TopicPartition]]) -> Sample:
        """For each broker and the partitions being added to it: the bytes it holds of each
        (0 while it has not created the replica yet), or None when it did not answer."""
        sample: Sample = {}
        for broker, tps in sorted(adding.items()):
            wanted = sorted(set(tps))
            sizes = self._ask(broker, wanted)
            for tp in wanted:
                sample[(tp, broker)] = None if sizes is None else sizes.get(tp, 0)
        return sample

    def _ask(self, broker: int, tps: list[TopicPartition]) -> dict[TopicPartition, int] | None:
        request: dict[str, list[int]] = {}
        for topic, partition in tps:
            request.setdefault(topic, []).append(partition)
        try:
            client = self._connected()
            return sizes_on(client.describe_log_dirs(request, brokers=[broker]), broker)
        except Exception as exc:  # kafka-python raises several unrelated types
            log.warning("replica_sizes_unanswered", broker=broker, error=repr(exc))
            self.close()  # a fresh client next time: this one may keep waiting on the broker
            return None

    def _connected(self) -> KafkaAdminClient:
        if self._client is None:
            client: KafkaAdminClient = connect_admin(
                self._bootstrap, client_id="kmedic-watchdog", timeout_ms=self._timeout_ms
            )
            self._client = client
        return self._client

    def close(self) -> None:
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None
