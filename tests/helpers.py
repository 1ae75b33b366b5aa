"""Small helpers for tests (importable as ``helpers`` from any test module)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from confluent_kafka import KafkaException
from prometheus_client.parser import text_string_to_metric_families

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster, client_settings
from manager.audit.kafka_reader import read_records
from manager.audit.log import AuditRecord

T = TypeVar("T")


def kafka_conf(cluster: Cluster, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """confluent-kafka settings for test clients of a plaintext (bootstrap string) or secured
    (``kafka:`` settings) cluster. Their librdkafka logs (connection refused while a test has
    a broker down) go through logging, shown with a failing test's output, instead of as raw
    ``%3|FAIL`` lines on stderr."""
    conf = client_settings(cluster).confluent()
    conf_any: dict[str, Any] = {**conf, "logger": logging.getLogger("tests.kafka")}
    conf_any.update(settings or {})
    return conf_any


def wait_for(
    check: Callable[[], T],
    *,
    timeout: float,
    interval: float = 0.5,
    what: str = "condition",
    explain: Callable[[], str] | None = None,
) -> T:
    """Poll ``check()`` until it returns a truthy value; fail the test naming ``what``, with
    what ``explain()`` says of the system then (a story the failure alone does not tell)."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    told = ""
    if explain is not None:
        try:
            told = f"\n{explain()}"
        except Exception as exc:  # the explanation is best effort; the timeout is the failure
            told = f"\n(no explanation: {exc!r})"
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last value: {last!r}){told}")


def http_get(url: str) -> tuple[int, str, str]:
    """(status, content type, body) of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()


def create_placed_topic(
    bootstrap: str,
    name: str,
    assignment: list[list[int]],
    configs: dict[str, str] | None = None,
) -> None:
    """A topic whose partition i lives on the brokers ``assignment[i]`` (with ``configs``);
    returns once it is in the metadata."""
    # kafka-python: confluent-kafka 2.16 rejects an explicit replica assignment locally.
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import KafkaConnectionError, TopicAlreadyExistsError

    placed = NewTopic(
        name, replica_assignments=dict(enumerate(assignment)), topic_configs=configs or {}
    )
    for attempt in range(1, 4):
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([placed])
            break
        except TopicAlreadyExistsError:
            if attempt == 1:
                raise
            break  # the attempt before created it, and its answer was lost
        except KafkaConnectionError:
            # A broker the fixture has just restarted may reset the first connection to it.
            if attempt == 3:
                raise
        finally:
            admin.close()
    wait_until_usable(bootstrap, [name])


def wait_until_usable(bootstrap: Cluster, topics: list[str]) -> None:
    """Until every broker knows the new topics with their leaders (kmedic.topic_wait): a
    client reading or describing a topic the moment it was created is otherwise refused by a
    broker that has not heard of it yet."""
    from confluent_kafka.admin import AdminClient

    from kmedic.topic_wait import broker_addresses, wait_until_known

    brokers = broker_addresses(AdminClient(kafka_conf(bootstrap)).list_topics(timeout=15))
    wait_until_known(topics, brokers, admin_conf=kafka_conf(bootstrap))


def active_alerts(port: int) -> dict[str, str]:
    """The alerts a local manager's status page says are active (key: reason)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status.json", timeout=10) as page:
        found: dict[str, str] = json.loads(page.read())["active_alerts"]
    return found


def scrape(port: int, name: str, **labels: str) -> float | None:
    """The first sample of metric ``name`` with these labels on a local /metrics page; None
    while the page does not answer or has no such sample yet."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    except OSError:
        return None  # still starting
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None


def read_audit(bootstrap: Cluster, topic: str) -> list[AuditRecord]:
    """Every audit record in ``topic`` so far; [] while the topic does not exist yet or a
    leader moves (read again)."""
    try:
        return list(read_records(bootstrap, topic, timeout_s=10))
    except (KafkaException, KmedicError):
        return []


def kmedic_process(
    *args: str,
    timeout: float = 300,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """`kmedic ARGS...` as its own process, as an operator runs it (output captured; ``env``
    replaces the environment when given; run in ``cwd`` when given)."""
    return subprocess.run(
        [sys.executable, "-m", "composition.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
    )


def kmedic_in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`kmedic ARGS...` called in the test's own process: (exit code, stdout, stderr). Quicker
    than kmedic_process where the process boundary is not what is tested."""
    from composition.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def replicas_of(bootstrap: str, topic: str) -> dict[int, tuple[list[int], list[int]]]:
    meta = _admin(bootstrap).list_topics(topic, timeout=10).topics[topic]
    return {p.id: (list(p.replicas), list(p.isrs)) for p in meta.partitions.values()}


def healed_off(bootstrap: str, topic: str, victim: int, rf: int = 2) -> bool:
    """Every partition of ``topic`` on ``rf`` replicas, none on ``victim``, all in sync."""
    return all(
        victim not in replicas and len(replicas) == rf and sorted(isr) == sorted(replicas)
        for replicas, isr in replicas_of(bootstrap, topic).values()
    )


def placed_for_a_heal(
    bootstrap: str, topic: str, partitions: int, rack_of: Callable[[int], str | None]
) -> int:
    """``topic`` at RF 2 with every partition followed by one broker, the victim a test kills
    to have it healed, and led by the brokers on other racks in turn; returns the victim. The
    victim holds no partition alone: the session's other tests leave single-replica topics
    behind, and a partition with no live copy cannot be healed (the heal is all or nothing,
    so it would refuse). Placed, not left to Kafka: a topic Kafka placed had both its
    followers on such brokers (found by CI)."""
    meta = _admin(bootstrap).list_topics(timeout=10)
    brokers = sorted(meta.brokers)
    alone = {
        p.replicas[0]
        for t in meta.topics.values()
        for p in t.partitions.values()
        if len(p.replicas) == 1
    }
    free = [b for b in brokers if b not in alone]
    if not free:
        pytest.fail(f"every broker ({brokers}) holds a single-replica partition")
    victim = free[0]
    leaders = [b for b in brokers if rack_of(b) != rack_of(victim)] or [
        b for b in brokers if b != victim
    ]
    create_placed_topic(
        bootstrap, topic, [[leaders[n % len(leaders)], victim] for n in range(partitions)]
    )
    return victim


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

    return AdminClient(kafka_conf(bootstrap))
