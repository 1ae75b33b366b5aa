"""What one cycle observed of the cluster, before it becomes a snapshot: the Admin API's
answers (the partitions as a table), the feeds' newest records, and the manager's memory
(when brokers went and came back). ``manager.monitor.observe`` judges it and builds the
snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field

from kmedic.brokerstats import BrokerStats, Heartbeat
from kmedic.kafka_admin import ReplicationTiming
from kmedic.metadata import BrokerNode, Reassignment
from kmedic.partition_table import PartitionTable
from kmedic.replica_columns import EMPTY, AgentRecord, ReplicaColumns, stripped
from manager.model.placement_config import PlacementConfig
from manager.model.snapshot import Leadership, Quorum
from manager.monitor.load_columns import LoadColumns

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class AgentView:
    """What the stats topic says about one broker. Records are kept without their replica
    entries, which are held as columns in ``replicas`` (kmedic.replica_columns): a record given
    with entries has them moved there."""

    latest: BrokerStats  # newest record, healthy or not
    last_healthy_ms: int | None  # newest record without a failure
    healthy: BrokerStats | None  # that record (sizes and disk come from it)
    replicas: ReplicaColumns = EMPTY  # the healthy record's replica entries
    heard: Heartbeat | None = None  # the newest heartbeat between samples, if any
    # The moment up to which the feed has read every record of the stats topic's partition
    # holding this agent's (manager.monitor.read_to): its silence is evidence only that far.
    # None: not vouched for (yet) - its silence is no evidence at all.
    read_to_ms: int | None = None

    def __post_init__(self) -> None:
        healthy = self.healthy
        if healthy is not None and (healthy.leaders or healthy.followers):
            object.__setattr__(self, "replicas", ReplicaColumns.of(healthy))
            object.__setattr__(self, "healthy", stripped(healthy))
            if self.latest is healthy:
                object.__setattr__(self, "latest", self.healthy)
        if self.latest.leaders or self.latest.followers:
            object.__setattr__(self, "latest", stripped(self.latest))

    def record(self) -> AgentRecord:
        """The newest record with its replicas (none when it is not the healthy one)."""
        return AgentRecord(self.latest, self.replicas if self.latest is self.healthy else EMPTY)


@dataclass(frozen=True)
class Observation:
    taken_at_ms: int
    cluster: str
    live: dict[int, BrokerNode]  # registered, unfenced brokers (DescribeCluster)
    partitions: PartitionTable  # the Metadata answer's, in its order
    reassignments: dict[TopicPartition, Reassignment]
    agents: dict[int, AgentView]
    loads: LoadColumns  # the loads feed's newest record of each partition
    placement: PlacementConfig
    leadership: Leadership
    own_moves: frozenset[TopicPartition]  # partitions of kmedic's in-flight plan
    moves_last_hour: int
    first_absent_ms: dict[int, int] = field(default_factory=dict)
    # When each broker was last seen back in the metadata after being seen absent.
    returned_ms: dict[int, int] = field(default_factory=dict)
    # When each live broker was first seen in a controlled shutdown's shape, while it is.
    shutdown_seen_ms: dict[int, int] = field(default_factory=dict)
    known_racks: dict[int, str] = field(default_factory=dict)
    min_insync: dict[str, int] = field(default_factory=dict)  # by topic, where known
    # KIP-966 eligible leader replicas, of the partitions that have any (read only for the
    # topics with a partition under min.insync.replicas: the only ones that can).
    eligible_leaders: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    quorum: Quorum | None = None  # the KRaft controller quorum (None: not read)
    # Kafka's own auto.leader.rebalance.enable (None: not read)
    kafka_auto_leader_rebalance: bool | None = None
    # Each live broker's static replication settings, where read (monitor.broker_settings).
    replication_settings: dict[int, ReplicationTiming] = field(default_factory=dict)
