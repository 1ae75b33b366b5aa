"""The snapshot's partition table: the Metadata answer's rows sorted by topic name, then
partition, with what the feeds say of each joined to it as columns - its size (the agents'
replica columns), its load (the loads feed) and Kafka's eligible leaders. No model per
partition is made (``manager.model.topics`` builds them where a model is wanted)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kmedic.partition_table import Loads, PartitionTable, Ragged
from kmedic.replica_columns import Keys, join, largest_by_key, last_wins, partition_keys
from manager.model.topics import Topics
from manager.monitor.observation import Observation


def partition_sizes(obs: Observation, keys: Keys) -> npt.NDArray[np.int64]:
    """Each partition's size: the leader's log size from its agent (the last agent's, when
    two say they lead it), else the largest follower's; 0 when no agent reports it. Joined
    by sorted keys over the agents' replica columns (1.3 M entries at fleet scale)."""
    healthy = [a.replicas for a in obs.agents.values() if a.healthy is not None]
    if not healthy:
        return np.zeros(len(keys), dtype=np.int64)
    led, led_size = last_wins(
        np.concatenate([r.leader_key for r in healthy]),
        np.concatenate([r.leader_size for r in healthy]),
    )
    found, sizes = join(led, led_size, keys, 0)
    missing = np.flatnonzero(~found)
    if len(missing):
        followed, largest = largest_by_key(
            np.concatenate([r.follower_key for r in healthy]),
            np.concatenate([r.follower_size for r in healthy]),
        )
        sizes[missing] = join(followed, largest, keys[missing], 0)[1]
    return sizes


def _loads(obs: Observation, keys: Keys, max_age_ms: int) -> Loads:
    """Each partition's load from the loads feed (NaN: none; a window is trusted while its
    newest report is fresh and it held samples)."""
    found, f = obs.loads.at(keys)
    known = found & ~np.isnan(f["bytes_in"])
    nan = np.nan

    def rate(name: str) -> npt.NDArray[np.float64]:
        return np.where(known, np.maximum(0.0, np.nan_to_num(f[name], nan=0.0)), nan)

    fresh = (obs.taken_at_ms - f["last_report_ms"] <= max_age_ms) & (f["samples"] > 0)
    return Loads(rate("bytes_in"), rate("bytes_out"), rate("messages_in"), ~known | fresh)


def snapshot_topics(obs: Observation, max_stats_age_ms: int) -> Topics:
    """The snapshot's topics: the Metadata answer's table sorted by topic name, then
    partition, with each partition's size, load and eligible leaders joined to it."""
    table = obs.partitions
    present = np.flatnonzero(np.bincount(table.topic, minlength=len(table.names)))
    names = sorted((table.names[t], t) for t in present.tolist())
    rank = np.full(len(table.names), -1, dtype=np.int32)
    rank[[t for _, t in names]] = np.arange(len(names), dtype=np.int32)
    topic = rank[table.topic]
    order = np.lexsort((table.partition, topic))
    topic = topic[order]
    number = table.partition[order]
    sorted_names = tuple(name for name, _ in names)
    keys = list(zip(map(sorted_names.__getitem__, topic.tolist()), number.tolist(), strict=True))
    elr = obs.eligible_leaders
    eligible = {i: elr[k] for i, k in enumerate(keys) if k in elr} if elr else {}
    ids = partition_keys(sorted_names, topic, number)
    return Topics(
        PartitionTable(
            names=sorted_names,
            topic=topic,
            partition=number,
            leader=table.leader[order],
            replicas=table.replicas.take(order),
            isr=table.isr.take(order),
            offline=table.offline.take(order),
            eligible=Ragged.sparse(len(keys), eligible),
            size=partition_sizes(obs, ids),
            loads=_loads(obs, ids, max_stats_age_ms),
            min_insync=np.array([obs.min_insync.get(t, 0) for t in sorted_names], dtype=np.int32),
        )
    )
