"""Assemble a BrokerStats record from what the sources returned (pure, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter

from agent.estimator import Estimate, estimate
from agent.exporter import ExporterSample, PartitionLog, TopicPartition
from agent.roles import LocalPartition
from kmedic import brokerstats as bs
from kmedic.metadata import Reassignment


@dataclass(frozen=True)
class Header:
    """The fields every record of this agent shares, plus this sample's time and identity."""

    cluster: str
    broker_id: int
    host: str
    rack: str | None
    timestamp_ms: int
    interval_s: float
    agent_version: str
    kafka_version: str | None

    @property
    def sample_id(self) -> str:
        return f"{self.broker_id}-{self.timestamp_ms}"


_EMPTY_LOG = PartitionLog(0, 0, 0)
_ZERO_TOTALS = bs.Totals(
    bytes_in_per_s=0.0,
    bytes_out_per_s=0.0,
    messages_in_per_s=0.0,
    leader_count=0,
    follower_count=0,
    reassigning_count=0,
    under_replicated_count=0,
    log_size_bytes=0,
)


def _base(header: Header) -> dict[str, Any]:
    return {
        "schema_version": bs.SCHEMA_VERSION,
        "sample_id": header.sample_id,
        "chunk_index": 0,
        "chunk_count": 1,
        "cluster": header.cluster,
        "broker_id": header.broker_id,
        "host": header.host,
        "rack": header.rack,
        "timestamp_ms": header.timestamp_ms,
        "interval_s": header.interval_s,
        "agent_version": header.agent_version,
        "kafka_version": header.kafka_version,
    }


def failure_record(
    header: Header, failure: bs.Failure, log_dirs: list[bs.LogDir]
) -> bs.BrokerStats:
    """A record saying the broker could not be read: no replicas, zero totals."""
    return bs.BrokerStats(
        **_base(header),
        rate_window_s=None,
        failure=failure,
        leaders=[],
        followers=[],
        reassigning=[],
        log_dirs=log_dirs,
        totals=_ZERO_TOTALS,
    )


def full_record(
    header: Header,
    prev: ExporterSample | None,
    cur: ExporterSample,
    roles: list[LocalPartition],
    reassignments: dict[TopicPartition, Reassignment],
    log_dirs: list[bs.LogDir],
    failure: bs.Failure | None = None,
) -> bs.BrokerStats:
    """A complete sample (``failure`` may only be a disk error here) of the partitions in
    ``roles`` (agent.roles)."""
    bid = header.broker_id
    leaders_info = [p for p in roles if p.leader == bid]
    followers_info = [p for p in roles if p.leader != bid]
    est: Estimate = estimate(prev, cur, [(p.topic, p.partition) for p in leaders_info])
    leaders = []
    for p in leaders_info:
        tp = (p.topic, p.partition)
        log = cur.partitions.get(tp, _EMPTY_LOG)
        r = est.leaders[tp]
        leaders.append(
            bs.LeaderReplica(
                topic=p.topic,
                partition=p.partition,
                bytes_in_per_s=r.bytes_in_per_s,
                bytes_out_per_s=r.bytes_out_per_s,
                messages_in_per_s=r.messages_in_per_s,
                log_size_bytes=log.size,
                log_start_offset=log.log_start_offset,
                log_end_offset=log.log_end_offset,
                estimate=r.estimate,
            )
        )
    followers = []
    for p in followers_info:
        log = cur.partitions.get((p.topic, p.partition), _EMPTY_LOG)
        followers.append(
            bs.FollowerReplica(
                topic=p.topic,
                partition=p.partition,
                leader_id=p.leader,
                log_size_bytes=log.size,
                log_end_offset=log.log_end_offset,
                in_isr=p.in_isr,
            )
        )
    reassigning = [
        bs.ReassigningReplica(
            topic=tp[0],
            partition=tp[1],
            replicas=list(r.replicas),
            adding_replicas=list(r.adding),
            removing_replicas=list(r.removing),
        )
        for tp, r in sorted(reassignments.items())
        if bid in r.replicas or bid in r.adding
    ]
    totals = bs.Totals(
        bytes_in_per_s=est.broker.bytes_in_per_s,
        bytes_out_per_s=est.broker.bytes_out_per_s,
        messages_in_per_s=est.broker.messages_in_per_s,
        leader_count=len(leaders),
        follower_count=len(followers),
        reassigning_count=len(reassigning),
        under_replicated_count=sum(1 for p in leaders_info if p.under_replicated),
        log_size_bytes=sum(r.log_size_bytes for r in leaders)
        + sum(r.log_size_bytes for r in followers),
    )
    return bs.BrokerStats(
        **_base(header),
        rate_window_s=est.window_s,
        failure=failure,
        leaders=leaders,
        followers=followers,
        reassigning=reassigning,
        log_dirs=log_dirs,
        totals=totals,
    )


_LEADERS = TypeAdapter(list[bs.LeaderReplica])
_FOLLOWERS = TypeAdapter(list[bs.FollowerReplica])
_REASSIGNING = TypeAdapter(list[bs.ReassigningReplica])


def _json_sizes(adapter: TypeAdapter[list[Any]], entries: list[Any]) -> list[int]:
    """Each entry's JSON size, from one serialisation of the list: entries are flat objects,
    so ``},{`` separates two of them - unless a string holds it, which the count shows, and
    then each entry is serialised alone."""
    if not entries:
        return []
    parts = adapter.dump_json(entries)[2:-2].split(b"},{")
    if len(parts) != len(entries):
        return [len(e.model_dump_json().encode()) for e in entries]
    return [len(part) + 2 for part in parts]


def split_record(record: bs.BrokerStats, max_bytes: int) -> list[bs.BrokerStats]:
    """Chunks of at most ``max_bytes`` serialised each; replicas divided, the rest repeated."""
    if len(bs.to_json(record)) <= max_bytes:
        return [record]
    empty = record.model_copy(update={"leaders": [], "followers": [], "reassigning": []})
    # Room for the header plus the chunk fields growing by a few digits.
    budget = max_bytes - len(bs.to_json(empty)) - 32
    items: list[tuple[str, bs.LeaderReplica | bs.FollowerReplica | bs.ReassigningReplica]] = [
        *(("leaders", r) for r in record.leaders),
        *(("followers", r) for r in record.followers),
        *(("reassigning", r) for r in record.reassigning),
    ]
    sizes = [
        *_json_sizes(_LEADERS, record.leaders),
        *_json_sizes(_FOLLOWERS, record.followers),
        *_json_sizes(_REASSIGNING, record.reassigning),
    ]
    chunks: list[dict[str, list[object]]] = []
    current: dict[str, list[object]] = {"leaders": [], "followers": [], "reassigning": []}
    used = 0
    for (kind, item), json_size in zip(items, sizes, strict=True):
        size = json_size + 1  # the separating comma
        if size > budget:
            raise ValueError(f"one replica entry ({size} bytes) exceeds max_record_bytes")
        if used + size > budget and any(current.values()):
            chunks.append(current)
            current = {"leaders": [], "followers": [], "reassigning": []}
            used = 0
        current[kind].append(item)
        used += size
    chunks.append(current)
    return [
        empty.model_copy(update={**lists, "chunk_index": i, "chunk_count": len(chunks)})
        for i, lists in enumerate(chunks)
    ]
