"""The audit log's reader: records in topic order, repeats dropped, for people and tests.

Looking up where to start (the topic's partitions, their ends, the offsets for ``since``)
asks each partition's leader; while a leader moves (a broker died, a reassignment of the audit
topic itself) the answer is a transient error such as FENCED_LEADER_EPOCH. Those are asked
again, with a growing pause, until ``timeout_s``; any other error, or one that outlasts it,
ends the reading with one line naming the topic. librdkafka's own log lines go to the
``manager.audit.kafka_reader.rdkafka`` logger at DEBUG: a person reading the log sees the
one line, not the client's connection attempts (``--log-level DEBUG`` shows them).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Generator
from functools import partial
from typing import Any, TypeVar

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from pydantic import ValidationError
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from kmedic.errors import KmedicError, Unreachable
from kmedic.kafka_client import Cluster, client_settings, confluent_conf, error_text
from kmedic.logging import get_logger
from manager.audit.kafka_sink import DEFAULT_TOPIC
from manager.audit.log import AuditRecord

log = get_logger(__name__)

# Dropped repeats are close together (a replay follows the outage): a window of ids is enough.
DEDUPE_WINDOW = 200_000
# Errors of a partition whose leader is moving or briefly unreachable: asked again.
TRANSIENT = frozenset(
    {
        KafkaError.FENCED_LEADER_EPOCH,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.OFFSET_NOT_AVAILABLE,
        KafkaError.REPLICA_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.UNKNOWN_TOPIC_OR_PART,  # a broker whose metadata lags a reassignment
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,  # the leader's broker died and is not fenced yet (seen: 6 s)
        KafkaError._DESTROY_BROKER,  # the client dropped the dead leader's broker (seen)
    }
)
# Any live broker answers a metadata request at once: with none answering in this long, the
# reader gives up naming the address (a partition's leader may take longer: ``timeout_s``).
REACH_S = 5.0
# Errors that say no broker answered at all: the command could not ask (kmedic.exits).
NO_ANSWER = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
    }
)
T = TypeVar("T")


def transient(exc: BaseException) -> bool:
    if not isinstance(exc, KafkaException) or not exc.args:
        return False
    error = exc.args[0]
    return isinstance(error, KafkaError) and error.code() in TRANSIENT


def asked_until(call: Callable[[], T], what: str, timeout_s: float) -> T:
    """``call()``, asked again on a transient error until ``timeout_s``; a KmedicError naming
    ``what`` when it fails for good (Unreachable when no broker answered)."""
    retrying = Retrying(
        retry=retry_if_exception(transient),
        stop=stop_after_delay(timeout_s),
        wait=wait_exponential(multiplier=0.1, max=2.0),
        reraise=True,
    )
    try:
        return retrying(call)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        text = error_text(exc)
        if isinstance(error, KafkaError) and error.code() in NO_ANSWER:
            why = f"no broker answered in {timeout_s:.0f} s: {text}"
            raise Unreachable(f"{what} failed: {why}") from None
        raise KmedicError(f"{what} failed: {text}") from None


class _DebugOnly(logging.LoggerAdapter):  # type: ignore[type-arg]
    """librdkafka's log lines, every one at DEBUG."""

    def log(self, level: int, msg: object, *args: Any, **kwargs: Any) -> None:
        self.logger.log(logging.DEBUG, msg, *args, **kwargs)


def read_records(
    cluster: Cluster,
    topic: str = DEFAULT_TOPIC,
    *,
    since_ms: int | None = None,
    follow: bool = False,
    should_stop: Callable[[], bool] = lambda: False,
    timeout_s: float = 15.0,
    notice: Callable[[str], None] = lambda _: None,
) -> Generator[AuditRecord, None, None]:
    """Records in topic order with repeats (same id) dropped. Without ``follow`` it stops at
    the end of the topic as it was when reading started, and an error ends it. With
    ``follow`` a transient error (brokers restarting, a connection lost) is told to
    ``notice`` once, reading goes on, and ``notice`` hears again when records flow again."""
    problems: list[KafkaError] = []  # errors of the client itself (brokers down, ...)
    bootstrap_servers = client_settings(cluster).bootstrap
    consumer = Consumer(
        confluent_conf(
            cluster,
            {
                "error_cb": problems.append,
                "group.id": f"kmedic-actions-tail-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": False,
                "logger": _DebugOnly(logging.getLogger(f"{__name__}.rdkafka"), {}),
            },
        )
    )
    where = f"reading {topic} at {bootstrap_servers}"
    # Each ask gets a third of the time: a leader on a broker that died but is not fenced yet
    # does not answer (_TIMED_OUT), and the asks after its fencing must still fit.
    ask_s = max(1.0, timeout_s / 3)
    try:
        reach_s = min(REACH_S, timeout_s)
        meta = asked_until(
            lambda: consumer.list_topics(topic, timeout=min(ask_s, reach_s)), where, reach_s
        )
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            why = info.error.str() if info is not None and info.error else "missing"
            raise KmedicError(f"cannot read audit topic {topic} at {bootstrap_servers}: {why}")
        parts = [TopicPartition(topic, p) for p in sorted(info.partitions)]

        def end_of(tp: TopicPartition) -> int:
            return int(consumer.get_watermark_offsets(tp, timeout=ask_s)[1])

        ends = {tp.partition: asked_until(partial(end_of, tp), where, timeout_s) for tp in parts}
        if since_ms is not None:
            lookup = [TopicPartition(topic, tp.partition, since_ms) for tp in parts]
            starts = asked_until(
                lambda: consumer.offsets_for_times(lookup, timeout=ask_s), where, timeout_s
            )
            parts = [
                TopicPartition(
                    topic, tp.partition, tp.offset if tp.offset >= 0 else ends[tp.partition]
                )
                for tp in starts
            ]
        else:
            parts = [TopicPartition(topic, tp.partition, 0) for tp in parts]
        consumer.assign(parts)
        remaining = {tp.partition for tp in parts if tp.offset < ends[tp.partition]}
        seen: OrderedDict[str, None] = OrderedDict()
        deadline = time.monotonic() + timeout_s
        troubled = False
        while follow or remaining:
            if should_stop():
                return
            msg = consumer.poll(0.5)
            if follow and problems:
                troubled = _trouble(problems, topic, notice, troubled)
            if msg is None:
                if not follow and time.monotonic() > deadline:
                    raise KmedicError(
                        f"timed out reading {topic} at {bootstrap_servers} "
                        f"(partitions {sorted(remaining)} not read to the end)"
                    )
                continue
            error = msg.error()
            if error is not None and not follow:
                if error.code() in TRANSIENT:
                    continue  # the leader moves: the deadline bounds the wait
                raise KmedicError(f"reading {topic} failed: {error.str()}")
            if error is not None:
                problems.append(error)
                troubled = _trouble(problems, topic, notice, troubled)
                continue
            if troubled:
                notice(f"reading {topic} again")
                troubled = False
            deadline = time.monotonic() + timeout_s
            offset, partition = int(msg.offset() or 0), int(msg.partition() or 0)
            if offset + 1 >= ends.get(partition, 0):
                remaining.discard(partition)
            try:
                record = AuditRecord.from_json(msg.value() or b"")
            except ValidationError as exc:
                log.warning(
                    "audit_record_unreadable", offset=msg.offset(), errors=exc.error_count()
                )
                continue
            if record.id in seen:
                continue
            seen[record.id] = None
            if len(seen) > DEDUPE_WINDOW:  # --follow runs for days: remember recent ids only
                seen.popitem(last=False)
            yield record
    finally:
        consumer.close()


def _trouble(
    problems: list[KafkaError], topic: str, notice: Callable[[str], None], troubled: bool
) -> bool:
    """While following: a fatal error ends the reading; a transient one is told once."""
    error = problems[-1]
    problems.clear()
    if error.fatal():
        raise KmedicError(f"reading {topic} failed: {error.str()}")
    if not troubled:
        notice(f"cannot read {topic} right now ({error.str()}); still following")
    return True
