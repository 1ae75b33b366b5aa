"""The last resort's one act: an unclean election of the replica a person chose
(``kmedic recover``), and what it measurably left. Never called by the cycle: kmedic takes no
data-losing step on its own, in any mode.

Kafka's unclean election (ElectLeaders, type 1) makes the *first* live replica of the
assignment the leader (KRaft's PartitionChangeBuilder). When the chosen replica is not first,
the assignment is first reordered to put it first: a reassignment to the same replicas, which
copies nothing and completes at once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import KafkaError as KpKafkaError

from kmedic.errors import KmedicError, Refused
from kmedic.kafka_admin import connect_admin, describe_partitions
from kmedic.kafka_client import Cluster, confluent_conf
from kmedic.logging import get_logger
from manager.analyzer.recovery import Way, chosen_way, partition_ways
from manager.model.last_logs import OfflinePartition
from manager.model.snapshot import Snapshot

# (summary, details): one audit record of the recovery's, written before the next step or the
# step is not taken (an intent that cannot be audited is not acted on).
Audit = Callable[[str, dict[str, Any]], None]

UNCLEAN = 1  # ElectLeaders' election type
log = get_logger(__name__)


@dataclass(frozen=True)
class Elected:
    """What the election left: the partition's leader, and its log end then (None: not read)."""

    leader: int
    log_end: int | None
    measured_by: str = "not read"  # what answered log_end


class LastResort:
    def __init__(
        self,
        cluster: Cluster,
        *,
        client_id: str = "kmedic-recover",
        timeout_s: float = 30.0,
        stats_topic: str | None = None,
        outcome_wait_s: float = 90.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``stats_topic``: the agents' topic, where the new leader's log end is read when
        Kafka will not answer it (its high watermark held back while the ISR is under
        min.insync.replicas, KIP-966's strict rule: the usual case here), for up to
        ``outcome_wait_s`` (the agent's shipped 60 s interval and a margin)."""
        self._stats_topic = stats_topic
        self._outcome_wait_s = outcome_wait_s
        self._cluster = cluster
        self._client_id = client_id
        self._timeout_s = timeout_s
        self._clock = clock

    def elect(self, topic: str, partition: int, broker: int, live: Collection[int]) -> Elected:
        """Make ``broker`` lead ``topic:partition`` by an unclean election; KmedicError naming
        Kafka's refusal, or what the partition looked like when the wait ran out."""
        timeout_ms = int(self._timeout_s * 1000)
        client = connect_admin(self._cluster, client_id=self._client_id, timeout_ms=timeout_ms)
        try:
            replicas = self._replicas(client, topic, partition)
            if broker not in replicas:
                raise KmedicError(f"{topic}:{partition}: broker {broker} holds no replica of it")
            first_live = next((b for b in replicas if b in live), None)
            if first_live != broker:
                order = [broker, *(b for b in replicas if b != broker)]
                tp = KpTopicPartition(topic, partition)
                self._call(
                    lambda: client.alter_partition_reassignments({tp: order}, timeout_ms),
                    f"reordering {topic}:{partition}'s replicas to {order}",
                )
                self._until(
                    lambda: self._replicas(client, topic, partition)[0] == broker,
                    f"{topic}:{partition}'s replicas reordered to lead with broker {broker}",
                )
            self._call(
                lambda: client.elect_leaders(UNCLEAN, {topic: [partition]}, timeout_ms),
                f"the unclean election of {topic}:{partition}",
            )
            self._until(
                lambda: self._leader(client, topic, partition) == broker,
                f"broker {broker} leading {topic}:{partition}",
            )
        finally:
            client.close()
        elected_ms = int(time.time() * 1000)
        end = self._log_end(topic, partition, within_s=5.0)
        if end is not None:
            return Elected(broker, end, "Kafka (its high watermark)")
        if self._stats_topic is not None:
            end = self._agent_sampled_end(topic, partition, broker, elected_ms)
            if end is not None:
                return Elected(broker, end, f"broker {broker}'s agent, sampled after the election")
        return Elected(broker, None)

    def _replicas(self, client: Any, topic: str, partition: int) -> tuple[int, ...]:
        table = describe_partitions(client, [topic])
        row = table.row_of(topic, partition)
        if row is None:
            raise KmedicError(f"{topic}:{partition} is not in the cluster's metadata")
        return table.replicas.row(row)

    def _leader(self, client: Any, topic: str, partition: int) -> int:
        table = describe_partitions(client, [topic])
        row = table.row_of(topic, partition)
        return -1 if row is None else int(table.leader[row])

    def _call(self, call: Callable[[], Any], what: str) -> None:
        try:
            call()
        except KpKafkaError as exc:
            raise KmedicError(f"{what}: Kafka refused it: {type(exc).__name__}: {exc}") from exc

    def _until(self, done: Callable[[], bool], what: str) -> bool:
        deadline = self._clock() + self._timeout_s
        while self._clock() < deadline:
            if done():
                return True
            time.sleep(0.5)
        raise KmedicError(f"not seen within {self._timeout_s:.0f} s: {what}")

    def _agent_sampled_end(
        self, topic: str, partition: int, broker: int, after_ms: int
    ) -> int | None:
        """``broker``'s log end of the partition in its agent's first record sampled after
        ``after_ms`` (None: none within ``outcome_wait_s``)."""
        assert self._stats_topic is not None
        stats = self._stats_topic
        conf = {"group.id": self._client_id, "enable.auto.commit": False, "log_level": 0}
        consumer = Consumer(confluent_conf(self._cluster, conf))
        deadline = self._clock() + self._outcome_wait_s
        try:
            parts = consumer.list_topics(stats, timeout=10).topics[stats].partitions
            asked = [CkTopicPartition(stats, p, after_ms) for p in parts]
            consumer.assign(consumer.offsets_for_times(asked, timeout=10))
            while self._clock() < deadline:
                msg = consumer.poll(1.0)
                if msg is None or msg.error() is not None:
                    continue
                record = json.loads(msg.value() or b"{}")
                if record.get("broker_id") != broker or record.get("timestamp_ms", 0) < after_ms:
                    continue
                for entry in [*(record.get("leaders") or []), *(record.get("followers") or [])]:
                    if entry.get("topic") == topic and entry.get("partition") == partition:
                        return int(entry["log_end_offset"])
        except (KafkaException, ValueError, KeyError) as exc:
            log.info("agent_sample_not_read", partition=f"{topic}:{partition}", said=str(exc))
        finally:
            consumer.close()
        return None

    def _log_end(self, topic: str, partition: int, within_s: float) -> int | None:
        """The partition's end offset as its new leader answers it (its high watermark: with
        the leader alone in sync, its log end); asked again until the timeout while the new
        leader is not known to the client yet. None: not read (the election is done; its
        measure is a bonus)."""
        conf = confluent_conf(self._cluster, {"group.id": self._client_id, "log_level": 0})
        consumer = Consumer(conf)
        deadline = self._clock() + within_s
        try:
            while True:
                try:
                    # None when the client's wait ran out (its metadata still names no leader)
                    found = consumer.get_watermark_offsets(
                        CkTopicPartition(topic, partition), timeout=5.0
                    )
                except KafkaException as exc:
                    found, said = None, str(exc)
                else:
                    said = f"answered {found}"
                if found is not None and int(found[1]) >= 0:
                    return int(found[1])
                log.info("log_end_not_read", partition=f"{topic}:{partition}", said=said)
                if self._clock() >= deadline:
                    return None
                time.sleep(0.5)
        finally:
            consumer.close()


@dataclass(frozen=True)
class Taken:
    partition: str
    way: Way
    leader: int
    log_end: int | None
    outcome: str
    measured_by: str = "not read"

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "leader": self.leader,
            "log_end": self.log_end,
            "measured_by": self.measured_by,
            "estimate": self.way.to_dict(),
            "outcome": self.outcome,
        }


def take_last_resort(
    snap: Snapshot,
    key: str,
    name: str,
    accepted: int | None,
    resort: LastResort,
    audit: Audit,
    by: str,
    now_ms: int,
) -> Taken:
    """The way ``name`` out of offline partition ``key``, as a person typed it back with the
    loss they accept (``accepted``; None: any): Refused, in numbers, when it may not be taken
    now (``chosen_way``); else the intent audited, the election, the outcome audited."""
    off = next((o for o in snap.offline_partitions if f"{o.topic}:{o.partition}" == key), None)
    if off is None:
        raise Refused(f"{key} is not offline now (it has a leader, or Kafka elects one itself)")
    ways = partition_ways(snap, off, now_ms)
    way = chosen_way(ways, key, name, accepted)
    if isinstance(way, str):
        raise Refused(way)
    if way.kind == "recreate" or way.broker is None:
        raise Refused(
            f"{key}: kmedic does not recreate partitions: Kafka recreates none alone, only a "
            "whole topic deleted and created again (every partition's records); that is "
            f"`kafka-topics --delete` and `--create`, by a person ({way.sentence(key)})"
        )
    estimate = way.to_dict()
    loss = "any loss" if accepted is None else f"at most {accepted} records"
    audit(
        f"{by} asked for the last resort on {key}: {_said(way, key)}, accepting {loss}",
        {"estimate": estimate, "accepted": accepted, "ways": [w.to_dict() for w in ways]},
    )
    live = {b.id for b in snap.brokers if b.alive}
    try:
        elected = resort.elect(off.topic, off.partition, way.broker, live)
    except KmedicError as exc:
        audit(f"the last resort on {key} failed: {exc}", {"estimate": estimate})
        raise
    outcome = outcome_sentence(key, way, off, elected)
    audit(outcome, {"estimate": estimate, "log_end": elected.log_end, "by": elected.measured_by})
    return Taken(key, way, elected.leader, elected.log_end, outcome, elected.measured_by)


def _said(way: Way, key: str) -> str:
    return way.sentence(key).split(": ", 1)[1]


def outcome_sentence(key: str, way: Way, off: OfflinePartition, elected: Elected) -> str:
    """What the election measurably left, beside what was estimated."""
    said = f"{key} is led by broker {way.broker} after an unclean election"
    log_end = elected.log_end
    if log_end is None:
        return f"{said}; its log end was not read (estimated loss: at most {way.loses_at_most})"
    if way.loses_at_most is None:
        return f"{said}; its log ends at offset {log_end} (no bound was estimated)"
    sampled = next((log.log_end for log in off.logs if log.broker == way.broker), 0)
    newest = way.loses_at_most + sampled
    return (
        f"{said}; its log ends at offset {log_end} (as {elected.measured_by} said), where the "
        "newest record its last leader "
        f"can have written was at most {newest - 1}: at most {max(0, newest - log_end)} records "
        f"lost (estimated {way.loses_at_most})"
    )
