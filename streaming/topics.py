"""Creating the job's output topics when they are missing.

The load topics are compacted (only the latest value per key matters and readers rebuild the
whole picture from them); the DLQ keeps every bad record for a retention period. An existing
load topic that is not compacted is reported, not changed: that is the operator's topic.
"""

from __future__ import annotations

import threading
from typing import Any

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_when_event_set,
    wait_exponential,
)

from kmedic.errors import KmedicError, Unreachable
from kmedic.kafka_client import client_settings, confluent_conf
from kmedic.logging import get_logger
from kmedic.own_topics import MIN_INSYNC, own_min_insync, own_replication
from kmedic.topic_wait import broker_addresses, wait_until_known
from streaming.config import StreamConfig

log = get_logger(__name__)

_TIMEOUT_S = 30.0
PROBE_TIMEOUT_S = 10.0  # how long one attempt waits for Kafka's metadata while it is down
# Waiting for Kafka at start: the wait between attempts doubles from FIRST_S up to MAX_S.
FIRST_S = 2.0
MAX_S = 60.0


class KafkaUnreachable(Unreachable):
    """Kafka did not answer (it may be down, or not started yet)."""


def ensure_output_topics_when_up(cfg: StreamConfig, stop: threading.Event) -> list[str]:
    """``ensure_output_topics``, as many times as it takes while Kafka is unreachable: a job
    started during an outage (or before its cluster) must be there when Kafka returns, not
    exit and be given up on by its supervisor. One line per attempt (each waits up to
    ``PROBE_TIMEOUT_S`` for an answer, then the wait between attempts doubles from ``FIRST_S``
    to ``MAX_S``; a signal ends that wait at once); [] when ``stop`` came first. Any other
    error (an ACL, a bad setting) ends the job at once, as before."""
    retrying = Retrying(
        retry=retry_if_exception_type(KafkaUnreachable),
        wait=wait_exponential(multiplier=FIRST_S, max=MAX_S),
        stop=stop_when_event_set(stop),
        sleep=lambda seconds: _pause(stop, seconds),
        before_sleep=_said_unreachable,
        reraise=True,
    )
    try:
        for attempt in retrying:
            with attempt:
                created = ensure_output_topics(cfg, PROBE_TIMEOUT_S)
                if attempt.retry_state.attempt_number > 1:
                    log.info("kafka_reached", attempts=attempt.retry_state.attempt_number)
                return created
    except KafkaUnreachable:
        if not stop.is_set():
            raise
    return []


def _pause(stop: threading.Event, seconds: float) -> None:
    stop.wait(seconds)  # a signal ends the wait at once


def _said_unreachable(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    log.warning(
        "kafka_unreachable_at_start",
        attempt=state.attempt_number,
        retry_in_s=round(state.upcoming_sleep, 1),
        error=str(error),
    )


def admin_client(cfg: StreamConfig) -> Any:
    """The librdkafka admin client that creates topics. It takes ``admin_options``, not
    ``kafka_options``: those are Java client settings for Spark, and many of their names
    (``default.api.timeout.ms``, ``sasl.jaas.config``) mean nothing to librdkafka."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    try:
        conf = confluent_conf(cfg.cluster_client, {"log_level": 0, **cfg.admin_options})
        return AdminClient(conf)
    except ValueError as exc:
        raise KmedicError(f"admin_options: {exc}") from exc
    except KafkaException as exc:
        raise KmedicError(f"admin_options: {exc.args[0].str()}") from exc


def wanted_topics(cfg: StreamConfig) -> dict[str, dict[str, str]]:
    """Output topic -> the configs it is created with."""
    compact = {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}
    return {
        cfg.topics.replica_loads: dict(compact),
        cfg.topics.broker_loads: dict(compact),
        cfg.topics.dlq: {
            "cleanup.policy": "delete",
            "retention.ms": str(cfg.topics.dlq_retention_ms),
        },
    }


def ensure_output_topics(cfg: StreamConfig, reach_timeout_s: float = _TIMEOUT_S) -> list[str]:
    """Create missing output topics; returns the names created. ``reach_timeout_s``: how long
    to wait for Kafka's first answer (KafkaUnreachable after it)."""
    from confluent_kafka import KafkaException
    from confluent_kafka import admin as kafka_admin  # names not re-exported for mypy

    admin = admin_client(cfg)
    try:
        metadata = admin.list_topics(timeout=reach_timeout_s)
    except KafkaException as exc:
        raise KafkaUnreachable(
            f"cannot reach Kafka at {client_settings(cfg.cluster_client).bootstrap} "
            f"to check the output topics: {exc}"
        ) from exc
    brokers = max(1, len(metadata.brokers))
    replication = own_replication(cfg.topics.replication_factor, brokers)
    wanted = {
        name: {**conf, MIN_INSYNC: str(own_min_insync("loads", replication))}
        for name, conf in wanted_topics(cfg).items()
    }
    missing = [
        kafka_admin.NewTopic(  # type: ignore[attr-defined]
            name, cfg.topics.partitions, replication, config=conf
        )
        for name, conf in wanted.items()
        if name not in metadata.topics
    ]
    created: list[str] = []
    for name, future in (admin.create_topics(missing) if missing else {}).items():
        try:
            future.result(timeout=_TIMEOUT_S)
            created.append(name)
            log.info("topic_created", topic=name, **wanted[name])
        except KafkaException as exc:
            if "TOPIC_ALREADY_EXISTS" not in str(exc):
                raise KmedicError(f"cannot create output topic {name}: {exc}") from exc
    if created:
        # Each broker is asked with the job's own connection settings (security included).
        conf = confluent_conf(cfg.cluster_client, {"log_level": 0, **cfg.admin_options})
        wait_until_known(created, broker_addresses(metadata), admin_conf=conf)
    _warn_if_not_compacted(admin, cfg, skip=set(created))
    return created


def _warn_if_not_compacted(admin: Any, cfg: StreamConfig, skip: set[str]) -> None:
    """Check the load topics that existed before (the ones just created are compacted)."""
    from confluent_kafka import admin as kafka_admin  # names not re-exported for mypy

    names = [n for n in (cfg.topics.replica_loads, cfg.topics.broker_loads) if n not in skip]
    if not names:
        return
    topic = kafka_admin.ResourceType.TOPIC  # type: ignore[attr-defined]
    config_resource = kafka_admin.ConfigResource  # type: ignore[attr-defined]
    resources = [config_resource(topic, n) for n in names]
    for resource, future in admin.describe_configs(resources).items():
        try:
            entries = future.result(timeout=_TIMEOUT_S)
        except Exception as exc:  # a describe failure must not stop the job
            log.warning("topic_config_unreadable", topic=resource.name, error=str(exc))
            continue
        policy = entries.get("cleanup.policy")
        if policy is not None and "compact" not in str(policy.value):
            log.warning(
                "topic_not_compacted",
                topic=resource.name,
                cleanup_policy=policy.value,
                why="only the latest load per key is kept when the topic is compacted",
            )
