"""Waiting for a new topic to be usable: every broker's metadata has it, with a leader for
each partition.

Kafka answers CreateTopics once the controller has committed the topic; the brokers learn of
it a moment later, and a client asking one that has not yet (describe its configs, produce to
it, read its offsets) gets UNKNOWN_TOPIC_OR_PART or NOT_LEADER_FOR_PARTITION. Whoever creates a
topic and uses it at once waits here first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from kmedic.errors import KmedicError
from kmedic.logging import get_logger

log = get_logger(__name__)


def broker_addresses(metadata: Any) -> list[str]:
    """``host:port`` of every broker in a librdkafka ClusterMetadata."""
    return [f"{b.host}:{b.port}" for b in metadata.brokers.values()]


def wait_until_known(
    topics: list[str],
    brokers: list[str],
    *,
    admin_conf: Mapping[str, Any] | None = None,
    timeout_s: float = 30.0,
    known_to: Callable[[str, str], str | None] | None = None,
) -> None:
    """Return once every broker in ``brokers`` (``host:port``) knows each topic with a leader
    for every partition; raise naming what is still missing after ``timeout_s``. Each broker is
    asked on its own connection: a fresh client sends its first metadata request to its
    bootstrap broker. ``admin_conf`` carries client settings (security) for those clients."""
    ask = known_to or (lambda broker, topic: _problem_on(admin_conf or {}, broker, topic))
    deadline = time.monotonic() + timeout_s
    pending = {(b, t) for b in brokers for t in topics}
    problems: dict[tuple[str, str], str] = {}
    while pending:
        for key in sorted(pending):
            problem = ask(*key)
            if problem is None:
                pending.discard(key)
                problems.pop(key, None)
            else:
                problems[key] = problem
        if not pending:
            break
        if time.monotonic() > deadline:
            shown = "; ".join(f"{t} on {b}: {problems[(b, t)]}" for b, t in sorted(pending))
            raise KmedicError(f"new topics not usable after {timeout_s:.0f}s: {shown}")
        time.sleep(0.1)
    log.info("topics_known_to_every_broker", topics=topics, brokers=len(brokers))


def _problem_on(admin_conf: Mapping[str, Any], broker: str, topic: str) -> str | None:
    """None when ``broker`` knows ``topic`` and a leader for each of its partitions."""
    conf: dict[str, Any] = {**admin_conf, "bootstrap.servers": broker, "log_level": 0}
    try:
        found = AdminClient(conf).list_topics(topic=topic, timeout=5).topics.get(topic)
    except KafkaException as exc:
        return str(exc)
    if found is None or found.error is not None:
        return "unknown topic" if found is None else str(found.error)
    leaderless = [p for p, meta in found.partitions.items() if meta.leader < 0 or meta.error]
    if not found.partitions or leaderless:
        return f"no leader yet for partitions {leaderless or 'all'}"
    return None
