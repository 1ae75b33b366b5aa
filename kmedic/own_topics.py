"""The one policy kmedic creates its own topics with (the agents' stats topic, the stream's
load and dead-letter topics, the manager's audit topic): as many replicas as asked, at most
the cluster's brokers, and ``min.insync.replicas`` one below the replication factor, at most 2
and at least 1. At RF 3 that is Kafka's usual safe pair (3/2): an ``acks=all`` write survives
the loss of the broker that acknowledged it, and one replica out of sync blocks no write - the
rules `kmedic topics check` holds every topic to (manager/analyzer/topic_safety.py), so kmedic's
own topics pass its own check. (Below RF 3 no setting passes both; RF 2 keeps 1: writes go on
through one loss.)"""

from __future__ import annotations

MIN_INSYNC = "min.insync.replicas"


def own_replication(wanted: int, brokers: int) -> int:
    """The replication factor an own topic is created with on a cluster of ``brokers``."""
    return max(1, min(wanted, brokers))


def own_min_insync(replication_factor: int) -> int:
    """The ``min.insync.replicas`` an own topic of ``replication_factor`` is created with."""
    return max(1, min(2, replication_factor - 1))
