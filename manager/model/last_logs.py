"""The evidence of an offline partition's logs, as the agents last sampled them: what the last
resort's arithmetic (``manager.analyzer.recovery``) needs to say what each way out would lose.

A partition is offline when it has no leader and no in-sync or eligible (KIP-966) replica is
alive: Kafka elects none on its own. The monitor (``manager.monitor.last_logs``) gathers, once
per cycle and only for such partitions, its last leader's log as that leader's agent last
sampled it, when that leader was last known to be writing at the latest, and each replica's
last sampled log end; the snapshot carries them (``Snapshot.offline_partitions``).
"""

from __future__ import annotations

from pydantic import Field

from manager.model.frozen import Frozen
from manager.model.partition_models import INT32_MAX, Int32


class LeaderSample(Frozen):
    """The last leader's log, as its agent last sampled it."""

    broker: Int32
    log_start: int = Field(ge=0, description="its first offset then")
    log_end: int = Field(ge=0, description="the offset of its next record then")
    messages_per_s: float = Field(ge=0, description="its write rate then (messages/s)")
    sampled_at_ms: int = Field(ge=0, description="when its agent took that sample")


class ReplicaLog(Frozen):
    """One replica's log end, as its broker's agent last sampled it."""

    broker: Int32
    log_end: int = Field(ge=0)
    sampled_at_ms: int = Field(ge=0)


class OfflinePartition(Frozen):
    topic: str = Field(min_length=1)
    partition: int = Field(ge=0, le=INT32_MAX)
    leader: LeaderSample | None = Field(
        description="the last leader's log (None: no agent record of any replica leading it)"
    )
    died_at_ms: int | None = Field(
        default=None,
        ge=0,
        description="the latest moment its last leader can have written: the earlier of its "
        "agent seeing it not running and the manager seeing it dead (None: not known)",
    )
    logs: tuple[ReplicaLog, ...] = Field(
        default=(), description="each replica's last sampled log end, where an agent sampled it"
    )
