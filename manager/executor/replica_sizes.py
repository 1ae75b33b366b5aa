"""How many bytes the adding replicas of running moves hold: the progress watchdog's samples.

One DescribeLogDirs request per destination broker, naming only the partitions moving to it,
on a client of its own whose requests time out after ``sample_timeout_s``. The requests run in
a small thread pool and a sample waits for them no longer than that: a new connection to a
hung broker takes kafka-python 10 s to give up on, and the daemon must not wait with it. Two
kinds of failure, told apart:

- the broker did not answer (a timeout, a lost connection): None for its partitions, which
  the watchdog counts as no progress - a stopped JVM or a hung disk is a stall;
- kmedic could not ask (no client, a refusal, an API the broker lacks): its partitions are
  left out of the sample, and the watchdog judges nothing it cannot see - a watchdog that
  cannot read sizes must never cancel moves.

The client is kept across failures: a fresh one would bootstrap, possibly from a hung broker.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
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
    """Samples the sizes of replicas being added: one client (safe to share between threads),
    one request per broker in a small thread pool, and never longer than the timeout."""

    def __init__(self, bootstrap: Cluster, timeout_s: float) -> None:
        self._bootstrap = bootstrap
        self._timeout_s = timeout_s
        self._client: KafkaAdminClient | None = None
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="kmedic-sizes")
        self._asking: dict[int, Future[dict[TopicPartition, int] | None]] = {}

    def __call__(self, adding: Mapping[int, Iterable[TopicPartition]]) -> Sample:
        """For each broker and the partitions being added to it: the bytes it holds of each
        (0 while it has not created the replica yet), None when it did not answer within the
        timeout; nothing when kmedic could not ask it. A broker still busy with an earlier
        request is not asked again: it has not answered."""
        wanted = {b: sorted(set(tps)) for b, tps in adding.items()}
        for broker, tps in wanted.items():
            earlier = self._asking.get(broker)
            if earlier is None or earlier.done():
                self._asking[broker] = self._pool.submit(self._ask, broker, tps)
        futures = [self._asking[b] for b in wanted]
        wait(futures, timeout=self._timeout_s + 0.5)
        sample: Sample = {}
        for broker, tps in sorted(wanted.items()):
            future = self._asking[broker]
            sizes: dict[TopicPartition, int] | None = None
            if future.done():
                try:
                    sizes = future.result()
                except _CannotAsk:
                    continue
            for tp in tps:
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
        with self._lock:
            if self._client is None:
                client: KafkaAdminClient = connect_admin(
                    self._bootstrap,
                    client_id="kmedic-watchdog",
                    timeout_ms=int(self._timeout_s * 1000),
                )
                self._client = client
            return self._client

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            if self._client is not None:
                with contextlib.suppress(Exception):
                    self._client.close()
                self._client = None
