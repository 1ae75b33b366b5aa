"""Kafka's own `VerifiableProducer` and `VerifiableConsumer` (the bootstrapped `kafka-tools`
jars) as processes, and what their JSON lines say: which messages the cluster acknowledged,
which were read back. The proof of "no acknowledged write lost" is theirs, not a checker of
kmedic's: acked minus consumed, per topic, as Kafka's own system tests check it.

The producer writes increasing integers (its values) with acks=all and idempotence on, and
prints ``producer_send_success`` (topic, partition, offset, value) for each acknowledged one;
the consumer, with ``--verbose``, prints ``record_data`` for each record it reads."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kmedic.errors import KmedicError
from kmedic.localcluster import process
from kmedic.paths import jvm_jars

PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"
HEAP = "-Xmx160m"


def _classpath() -> str:
    jars = [*jvm_jars("kafka-tools"), *jvm_jars("kafka")]
    if not jars:
        raise KmedicError("the kafka-tools jars are not bootstrapped: run `make bootstrap`")
    return os.pathsep.join(str(j) for j in jars)


@dataclass
class ToolProcess:
    """One tool, its JSON lines going to ``out``; ``marker`` is in its command line."""

    name: str
    out: Path
    marker: str
    pid: int | None = None

    def running(self) -> bool:
        return process.is_running(self.pid, self.marker)

    def stop(self) -> None:
        """SIGTERM: the tool closes its client (the producer flushes what it has sent) and
        prints its last events; SIGKILL after 30 s."""
        if self.pid is not None:
            process.kill(self.pid, self.marker, signal.SIGTERM)


def start_producer(
    bootstrap: str,
    topic: str,
    workdir: Path,
    *,
    throughput: int,
    acks: str = "all",
    value_prefix: int | None = None,
) -> ToolProcess:
    """``acks``: all (with idempotence), or 1 (the leader's own append acknowledges: what an
    unclean election can lose without any replica having it); ``value_prefix``: values written
    as ``PREFIX.N``, so that two producers on one topic are told apart."""
    name = topic if value_prefix is None else f"{topic}.{value_prefix}"
    config = workdir / f"{name}.producer.properties"
    config.parent.mkdir(parents=True, exist_ok=True)
    every = "acks=all\nenable.idempotence=true\n" if acks == "all" else f"acks={acks}\n"
    config.write_text(
        # The tool sets retries=0 unless told: idempotence needs them.
        f"{every}retries=2147483647\n"
        "max.in.flight.requests.per.connection=5\ndelivery.timeout.ms=120000\n"
        "request.timeout.ms=15000\n"
    )
    out = workdir / f"{name}.producer.jsonl"
    prefix = [] if value_prefix is None else ["--value-prefix", str(value_prefix)]
    cmd = [
        _java(), HEAP, "-cp", _classpath(), PRODUCER,
        "--bootstrap-server", bootstrap, "--topic", topic,
        "--acks", "-1" if acks == "all" else acks,
        "--throughput", str(throughput), "--producer.config", str(config), *prefix,
    ]  # fmt: skip
    tool = ToolProcess(f"producer {name}", out, str(config))
    tool.pid = process.spawn(cmd, log_path=out, tie_to_parent=True)
    return tool


def start_consumer(bootstrap: str, topic: str, workdir: Path) -> ToolProcess:
    out = workdir / f"{topic}.consumer.jsonl"
    cmd = [
        _java(), HEAP, "-cp", _classpath(), CONSUMER,
        "--bootstrap-server", bootstrap, "--topic", topic, "--group-id", f"soak-{topic}",
        "--reset-policy", "earliest", "--verbose",
    ]  # fmt: skip
    tool = ToolProcess(f"consumer {topic}", out, f"soak-{topic}")
    tool.pid = process.spawn(cmd, log_path=out, tie_to_parent=True)
    return tool


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


def events(path: Path) -> Iterator[dict[str, object]]:
    """The JSON events of a tool's output (its log lines are skipped)."""
    if not path.exists():
        return
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.startswith("{"):
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by the kill at the end


@dataclass
class Tally:
    """Acknowledged and consumed values of one topic, and the send errors."""

    topic: str
    acked: set[str] = field(default_factory=set)
    consumed: set[str] = field(default_factory=set)
    send_errors: int = 0

    @property
    def lost(self) -> set[str]:
        return self.acked - self.consumed

    def summary(self) -> dict[str, object]:
        lost = sorted(self.lost, key=_number)
        return {
            "topic": self.topic,
            "acked": len(self.acked),
            "consumed": len(self.consumed),
            "send_errors": self.send_errors,
            "lost": len(lost),
            "lost_first": lost[:20],
        }


def tally(topic: str, producer_out: Path, consumer_out: Path) -> Tally:
    found = Tally(topic)
    for event in events(producer_out):
        if event.get("name") == "producer_send_success":
            found.acked.add(str(event.get("value")))
        elif event.get("name") == "producer_send_error":
            found.send_errors += 1
    found.consumed = set(consumed_values(events(consumer_out)))
    return found


def consumed_values(found: Iterable[dict[str, object]]) -> Iterator[str]:
    for event in found:
        if event.get("name") == "record_data":
            yield str(event.get("value"))


def consumed_count(consumer_out: Path) -> int:
    return sum(1 for _ in consumed_values(events(consumer_out)))


def acked_count(producer_out: Path) -> int:
    return sum(1 for e in events(producer_out) if e.get("name") == "producer_send_success")


def _number(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return sys.maxsize
