"""How many bytes the adding replicas of running moves hold: the progress watchdog's samples.

One DescribeLogDirs request per destination broker, naming only the partitions moving to it,
on a client of its own whose requests time out after ``sample_timeout_s`` (a new connection's
set-up, after 10 s: kafka-python's own bound). Two kinds of failure, told apart:

- the broker did not answer (a timeout, a lost connection): None for its partitions, which
  the watchdog counts as no progress - a stopped JVM or a hung disk is a stall;
- kmedic could not ask (no client, a refusal, an API the broker lacks): its partitions are
  left out of the sample, and the watchdog judges nothing it cannot see - a watchdog that
  cannot read sizes must never cancel moves.

The client is kept across failures: a fresh one would bootstrap, possibly from a hung broker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from kafka import errors as KpErrors
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


# The broker did not answer: its replicas' bytes did not grow, as far as anyone can tell.
_SILENT = (
    KpErrors.KafkaTimeoutError,
    KpErrors.RequestTimedOutError,
    KpErrors.KafkaConnectionError,
    KpErrors.NodeNotReadyError,
)


class _CannotAsk(Exception):
    """kmedic could not ask the broker: a fact about kmedic, not about the move."""


class ReplicaSizes:
    """Samples the sizes of replicas being added; one client, replaced after a failure."""

    def __init__(self, bootstrap: Cluster, timeout_s: float) -> None:
        self._bootstrap = bootstrap
        self._timeout_ms = int(timeout_s * 1000)
        self._client: KafkaAdminClient | None = None

    def __call__(self, adding: Mapping[int, Iterable[TopicPartition]]) -> Sample:
        """For each broker and the partitions being added to it: the bytes it holds of each
        (0 while it has not created the replica yet), None when it did not answer; nothing
        when kmedic could not ask it."""
        sample: Sample = {}
        for broker, tps in sorted(adding.items()):
            wanted = sorted(set(tps))
            try:
                sizes = self._ask(broker, wanted)
            except _CannotAsk:
                continue
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
        except _SILENT as exc:
            log.warning("replica_sizes_unanswered", broker=broker, error=repr(exc))
            return None  # kafka-python drops that connection and reconnects in the background
        except Exception as exc:  # kafka-python raises several unrelated types
            log.error("replica_sizes_unknown", broker=broker, error=repr(exc))
            raise _CannotAsk from exc

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
