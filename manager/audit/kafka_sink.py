"""Kafka edges of the audit log: the producer sink and the topic (the reader:
manager.audit.kafka_reader)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster, client_settings, confluent_conf
from kmedic.logging import get_logger
from kmedic.own_topics import MIN_INSYNC, own_min_insync, own_replication
from manager.audit.log import AuditRecord

log = get_logger(__name__)

DEFAULT_TOPIC = "kmedic.actions"


class KafkaAuditSink:
    """An acks=all producer to the audit topic; records of one cluster share a key, hence a
    partition, hence their order, kept across retries by one request in flight at a time.

    Not idempotent: an idempotent producer first asks some broker for a producer id, which in
    KRaft that broker takes from the controllers. A broker cut off from the controllers, fenced
    but still answering, answers "coordinator load in progress" for as long as the cut lasts,
    and librdkafka kept asking it: no audit record reached the topic during a whole heal (found
    by CI, tests/integration/test_network_faults.py). A record written twice by a retry is the
    same record (its id): readers keep the first (docs/audit.md)."""

    def __init__(
        self,
        name: str,
        cluster: Cluster,
        topic: str = DEFAULT_TOPIC,
        *,
        create_topic: bool = False,
        client_id: str = "kmedic-audit",
    ) -> None:
        self.name = name
        self.client_id = client_id  # names this instance's records in the brokers' request logs
        self.cluster = cluster
        self.bootstrap_servers = client_settings(cluster).bootstrap
        self.topic = topic
        # Create the topic before the first write it takes (a manager started while Kafka was
        # down could not create it at start; its records wait in the spool until then).
        self._topic_missing = create_topic
        self._producer: Any = None
        self._fatal: KafkaError | None = None
        self._timeout_ms: int | None = None

    def _ensure_producer(self, timeout_s: float) -> Any:
        timeout_ms = max(1000, int(timeout_s * 1000))
        # A shorter bound (a lease nearly spent) keeps the producer: what it has not
        # delivered by then is purged (``send``).
        kept = self._timeout_ms is not None and timeout_ms <= self._timeout_ms
        if self._producer is not None and self._fatal is None and kept:
            return self._producer
        if self._producer is not None:
            log.warning("audit_producer_recreated", sink=self.name, fatal=str(self._fatal))
            self._producer.purge()
            self._producer.flush(0)
        self._fatal = None
        self._timeout_ms = timeout_ms
        self._producer = Producer(
            confluent_conf(
                self.cluster,
                {
                    "client.id": self.client_id,
                    "enable.idempotence": False,
                    "max.in.flight.requests.per.connection": 1,
                    "acks": "all",
                    "linger.ms": 5,
                    # The bound: a record not acknowledged by then is reported failed, not retried
                    # forever in the background (it goes to the failover sink instead).
                    "message.timeout.ms": timeout_ms,
                    "socket.connection.setup.timeout.ms": max(1000, timeout_ms // 2),
                    "reconnect.backoff.max.ms": 1000,
                    "error_cb": self._on_error,
                    # librdkafka's own lines go through logging like everything else.
                    "logger": logging.getLogger(f"{__name__}.rdkafka.{self.name}"),
                },
            )
        )
        return self._producer

    def _on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self._fatal = err

    def send(self, records: list[AuditRecord], timeout_s: float) -> int:
        if not records:
            return 0
        if self._topic_missing:
            try:
                ensure_audit_topic(self.cluster, self.topic, timeout_s=timeout_s)
            except KmedicError as exc:
                log.warning("audit_topic_unavailable", sink=self.name, error=str(exc))
                return 0
            self._topic_missing = False
        producer = self._ensure_producer(timeout_s)
        outcome: list[KafkaError | bool | None] = [False] * len(records)

        def delivered(i: int) -> Callable[[KafkaError | None, Any], None]:
            def callback(err: KafkaError | None, _msg: Any) -> None:
                outcome[i] = err

            return callback

        for i, record in enumerate(records):
            while True:
                try:
                    producer.produce(
                        self.topic,
                        value=record.to_json(),
                        key=record.cluster.encode(),
                        timestamp=record.time_ms,
                        on_delivery=delivered(i),
                    )
                    break
                except BufferError:
                    producer.poll(0.1)
                except KafkaException as exc:
                    log.warning("audit_produce_failed", sink=self.name, error=str(exc))
                    outcome[i] = exc.args[0] if exc.args else None
                    break
        if producer.flush(timeout_s) > 0:
            # Not delivered within the bound: purged (their callbacks say so) and the producer
            # dropped with its connections, so nothing of this write reaches the topic after
            # the bound (a leader's lease: manager.audit.log). Purging alone is not enough: a
            # request librdkafka had built behind one still awaiting its acknowledgement (one
            # in flight at a time) was sent once that one was answered - a cut leader's
            # records reached the audit topic 3.4 and 4.0 s after its lease (the soak, seed
            # 7401). The next send connects anew.
            producer.purge()
            producer.flush(0)
            self._producer = None
            del producer  # librdkafka destroyed: its queued requests go with it
        acked = 0
        for result in outcome:
            if result is None:  # delivered without error
                acked += 1
            else:
                break
        if acked < len(records):
            first = outcome[acked]
            log.warning(
                "audit_sink_incomplete",
                sink=self.name,
                acked=acked,
                of=len(records),
                error=str(first) if first is not False else "no acknowledgement in time",
            )
        return acked

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None


def ensure_audit_topic(
    cluster: Cluster,
    topic: str = DEFAULT_TOPIC,
    replication_factor: int = 3,
    *,
    timeout_s: float = 15.0,
) -> None:
    """Create the audit topic when missing (one partition: one order for everything), with
    at most as many replicas as the cluster has brokers; KmedicError within about
    ``timeout_s`` when Kafka does not answer."""
    bootstrap_servers = client_settings(cluster).bootstrap
    conf = confluent_conf(cluster, {"logger": logging.getLogger(f"{__name__}.admin")})
    admin = AdminClient(conf)
    try:
        brokers = len(admin.list_topics(timeout=timeout_s).brokers)
    except KafkaException as exc:
        raise KmedicError(f"cannot reach Kafka at {bootstrap_servers}: {exc}") from exc
    replication_factor = own_replication(replication_factor, brokers)
    futures = admin.create_topics(
        [
            NewTopic(
                topic,
                num_partitions=1,
                replication_factor=replication_factor,
                config={
                    "retention.ms": str(30 * 24 * 3600 * 1000),
                    MIN_INSYNC: str(own_min_insync("audit", replication_factor)),
                },
            )
        ],
        request_timeout=timeout_s,
    )
    try:
        futures[topic].result(timeout=timeout_s + 5)
    except KafkaException as exc:
        err = exc.args[0]
        if err.code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise KmedicError(f"cannot create the audit topic {topic}: {err.str()}") from exc
