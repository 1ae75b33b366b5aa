"""The settings kmedic creates its own topics with, by what each is for, and the rule
`kmedic topics check` and the manager's `kmedic_unsafe_topic` judge those topics by.

- The agents' stats topic: ``min.insync.replicas`` one below the replication factor, at most
  2 (3/2 at RF 3): each agent's record is acknowledged by two brokers.
- The audit topic and the stream's load and dead-letter topics: ``min.insync.replicas`` 1, on
  purpose. kmedic writes them through the very losses it reports and heals: at 2, a partition
  with two of its three replicas on lost brokers would refuse every write - the audit silent
  (spooled on the manager's disk) for the whole of a two-broker incident, the load figures
  stopped. What 1 risks is a record acknowledged by a lone leader whose disk is then lost:
  a load figure the next window recomputes, an audit record the manager's log also holds.

Both at the configured replication factor (3 by default), capped at the cluster's brokers.
A topic of kmedic's whose ``min.insync.replicas`` is the one kmedic creates it with is not
called unsafe for it (``min_isr_loses_writes``); anything else about it is judged like any
topic (manager/analyzer/topic_safety.py).
"""

from __future__ import annotations

from typing import Literal

MIN_INSYNC = "min.insync.replicas"

Role = Literal["stats", "audit", "loads"]


def own_replication(wanted: int, brokers: int) -> int:
    """The replication factor an own topic is created with on a cluster of ``brokers``."""
    return max(1, min(wanted, brokers))


def own_min_insync(role: Role, replication_factor: int) -> int:
    """The ``min.insync.replicas`` kmedic creates a topic of ``role`` with."""
    if role == "stats":
        return max(1, min(2, replication_factor - 1))
    return 1


# The dead-letter topic's default name (the stream's config; the manager's names the rest).
DEFAULT_DLQ = "kmedic.brokerstats.dlq"


class OwnTopics:
    """kmedic's own topics by name, each with its role: called with a topic and its
    replication factor, the ``min.insync.replicas`` kmedic creates it with (None: not one of
    kmedic's). The check's rule for them (manager.analyzer.topic_safety.find_unsafe)."""

    def __init__(self, roles: dict[str, Role]) -> None:
        self.roles = dict(roles)

    @classmethod
    def named(cls, stats: str, audit: str, loads: tuple[str, ...]) -> OwnTopics:
        roles: dict[str, Role] = {name: "loads" for name in loads}
        return cls(roles | {stats: "stats", audit: "audit"})

    def __call__(self, topic: str, replication_factor: int) -> int | None:
        role = self.roles.get(topic)
        return None if role is None else own_min_insync(role, replication_factor)
