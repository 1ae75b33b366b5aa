"""The offline partitions' evidence (``manager.model.last_logs``), gathered once per cycle from
the agents' newest healthy records: only for partitions with no leader and no in-sync or
eligible replica alive (none, on a cluster as it should be: nothing here costs a cycle then)."""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np

from kmedic.replica_columns import TOPIC_IDS
from manager.model.last_logs import LeaderSample, OfflinePartition, ReplicaLog
from manager.monitor.observation import AgentView, Observation


def offline_partitions(
    obs: Observation, dead_since: Callable[[int], int | None]
) -> tuple[OfflinePartition, ...]:
    """Every offline partition of ``obs`` with its evidence; ``dead_since``: the observation's
    one rule of a broker's death (``manager.monitor.observe.dead_since``)."""
    table = obs.partitions
    leaderless = np.flatnonzero(table.leader < 0).tolist()
    found: list[OfflinePartition] = []
    for row in leaderless:
        topic, partition = table.names[table.topic[row]], int(table.partition[row])
        replicas = table.replicas.row(row)
        vouched = (*table.isr.row(row), *obs.eligible_leaders.get((topic, partition), ()))
        if any(b in obs.live for b in vouched):  # Kafka elects that one itself
            continue
        found.append(_evidence(obs, topic, partition, replicas, dead_since))
    return tuple(found)


def _evidence(
    obs: Observation,
    topic: str,
    partition: int,
    replicas: Collection[int],
    dead_since: Callable[[int], int | None],
) -> OfflinePartition:
    key = TOPIC_IDS.one(topic) << 32 | partition
    leader: LeaderSample | None = None
    logs: list[ReplicaLog] = []
    for b in replicas:
        view = obs.agents.get(b)
        if view is None or view.healthy is None:
            continue
        at, cols = view.healthy.timestamp_ms, view.replicas
        led = np.flatnonzero(cols.leader_key == key)
        if len(led):
            i = int(led[-1])
            logs.append(ReplicaLog(broker=b, log_end=int(cols.leader_log_end[i]), sampled_at_ms=at))
            if leader is None or at > leader.sampled_at_ms:
                leader = LeaderSample(
                    broker=b,
                    log_start=int(cols.leader_log_start[i]),
                    log_end=int(cols.leader_log_end[i]),
                    messages_per_s=float(cols.leader_messages_in[i]),
                    sampled_at_ms=at,
                )
            continue
        followed = np.flatnonzero(cols.follower_key == key)
        if len(followed):
            end = int(cols.follower_log_end[int(followed[-1])])
            logs.append(ReplicaLog(broker=b, log_end=end, sampled_at_ms=at))
    died = (
        None
        if leader is None
        else _died_at(obs.agents.get(leader.broker), dead_since(leader.broker))
    )
    return OfflinePartition(
        topic=topic, partition=partition, leader=leader, died_at_ms=died, logs=tuple(logs)
    )


def _died_at(view: AgentView | None, dead_since: int | None) -> int | None:
    """The latest moment the leader can have written: the earlier of its agent first seeing it
    not running and the manager's rule of its death (both at or after it)."""
    process = view.latest.process if view is not None else None
    seen_down = process.down_since_ms if process is not None else None
    known = [t for t in (seen_down, dead_since) if t is not None]
    return min(known) if known else None
