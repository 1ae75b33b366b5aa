"""The manager's two feeds as one pair: the stats topic (each broker's agent records, merged
into an ``AgentView``) and the loads topic (each partition's load, kept as columns), copied
together at the start of a cycle (``take``). ``FeedPair`` tails both in threads of the calling
process; ``manager.monitor.feed_process`` runs a ``FeedPair`` in a child process and hands its
copies over a pipe, so the decoding never holds the interpreter a cycle runs in."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kmedic.brokerstats import Heartbeat, from_json, heartbeat_from_json, is_heartbeat
from kmedic.kafka_client import Cluster
from manager.monitor.feeds import FeedStatus, LatestByKey
from manager.monitor.load_columns import LoadColumns, LoadFeed, LoadStore, LoadView
from manager.monitor.observation import AgentView


@dataclass(frozen=True)
class FeedSpec:
    """What the feeds read; picklable, so a child process is given it."""

    cluster: Cluster
    stats_topic: str
    loads_topic: str
    stats_lookback_s: float


@dataclass(frozen=True, eq=False)
class FeedCopy:
    """One consistent copy of both feeds: each broker's agent view, each partition's load."""

    agents: dict[int, AgentView]
    loads: LoadColumns

    @classmethod
    def empty(cls) -> FeedCopy:
        return cls({}, LoadStore().columns())


class Feeds(Protocol):
    """What a cycle reads the feeds through."""

    def start(self) -> Any: ...

    def stop(self) -> None: ...

    def take(self) -> FeedCopy: ...

    def status(self) -> list[FeedStatus]: ...


AgentValue = AgentView | Heartbeat  # a key's state: its records, or heartbeats alone so far


def decode_agent(raw: bytes) -> AgentValue:
    if is_heartbeat(raw):
        return heartbeat_from_json(raw)
    stats = from_json(raw)
    healthy = stats.failure is None
    return AgentView(
        latest=stats,
        last_healthy_ms=stats.timestamp_ms if healthy else None,
        healthy=stats if healthy else None,
    )


def merge_agent(old: AgentValue | None, new: AgentValue) -> AgentValue:
    """A heartbeat is kept beside the records (the newest one); of the records, the newest
    wins, the newest healthy one is kept beside it, chunks of one sample join, and a record of
    scope moving updates the moving partitions' entries of the last whole one."""
    if isinstance(new, Heartbeat):
        if isinstance(old, AgentView):
            if old.heard is not None and new.timestamp_ms < old.heard.timestamp_ms:
                return old
            return replace(old, heard=new)
        return old if old is not None and new.timestamp_ms < old.timestamp_ms else new
    if isinstance(old, Heartbeat):
        return replace(new, heard=old)
    merged = _merge_records(old, new)
    heard = old.heard if old is not None else None
    return merged if merged.heard is heard else replace(merged, heard=heard)


def _merge_records(old: AgentView | None, new: AgentView) -> AgentView:
    if old is None:
        return new
    if new.latest.timestamp_ms < old.latest.timestamp_ms:
        return old  # out of order (an agent restarted with a skewed clock): keep the newer
    if new.healthy is None:  # a failed sample: the last healthy one's replicas stand
        return AgentView(new.latest, old.last_healthy_ms, old.healthy, old.replicas)
    if old.healthy is not None and old.healthy.sample_id == new.healthy.sample_id:
        joined = old.healthy.model_copy(
            update={"reassigning": old.healthy.reassigning + new.healthy.reassigning}
        )
        return AgentView(joined, new.last_healthy_ms, joined, old.replicas.joined(new.replicas))
    if new.healthy.scope == "moving" and old.healthy is not None:
        # Only the moving partitions' entries: the others stand as the last whole record said.
        replicas = old.replicas.updated(new.replicas)
        return AgentView(new.latest, new.last_healthy_ms, new.healthy, replicas)
    return new


def _number(doc: dict[str, Any], name: str) -> float | None:
    value = doc.get(name)
    return float(value) if isinstance(value, int | float) else None


def decode_load(raw: bytes) -> LoadView:
    doc = json.loads(raw)
    if not isinstance(doc, dict) or "last_report_ms" not in doc:
        raise ValueError("not a replica-load record (no last_report_ms)")
    return LoadView(
        bytes_in_per_s=_number(doc, "bytes_in_per_s"),
        bytes_out_per_s=_number(doc, "bytes_out_per_s"),
        messages_in_per_s=_number(doc, "messages_in_per_s"),
        last_report_ms=int(doc["last_report_ms"]),
        samples=int(doc.get("samples") or 0),
    )


class FeedPair:
    """Both feeds, tailed in threads of this process."""

    def __init__(self, spec: FeedSpec) -> None:
        self.agents: LatestByKey[AgentValue] = LatestByKey(
            spec.cluster,
            spec.stats_topic,
            decode_agent,
            lookback_ms=int(spec.stats_lookback_s * 1000),
            merge=merge_agent,
            read_to=True,
        )
        self.loads = LoadFeed(spec.cluster, spec.loads_topic, decode_load)

    def start(self) -> FeedPair:
        self.agents.start()
        self.loads.start()
        return self

    def stop(self) -> None:
        self.agents.stop()
        self.loads.stop()

    def take(self) -> FeedCopy:
        agents = {
            int(k): replace(v, read_to_ms=self.agents.read_to_of(k))
            for k, v in self.agents.values().items()
            if k.isdigit() and isinstance(v, AgentView)
        }
        return FeedCopy(agents, self.loads.columns())

    def status(self) -> list[FeedStatus]:
        return [self.agents.status(), self.loads.status()]
