"""A topic and its partitions as models: what a snapshot file holds for each, and what the
edges (the status page, tests) read. The cycle reads the same facts as columns
(``manager.model.topics``)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from manager.model.frozen import Frozen as _Frozen

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Kafka's broker ids and partition numbers are 32-bit (the partition table holds them so).
Int32 = Annotated[int, Field(ge=-(2**31), le=INT32_MAX)]


class PartitionLoad(_Frozen):
    """Windowed load of one partition; the leader replica carries all of it, followers bytes in."""

    bytes_in_per_s: float = Field(ge=0)
    bytes_out_per_s: float = Field(ge=0)
    messages_in_per_s: float = Field(ge=0)
    window_valid: bool = Field(
        default=True, description="the window held enough samples to be trusted"
    )


class Partition(_Frozen):
    partition: int = Field(ge=0, le=INT32_MAX)
    replicas: tuple[Int32, ...] = Field(
        min_length=1, description="assignment, preferred leader first"
    )
    isr: tuple[Int32, ...]
    leader: Int32 | None = Field(description="current leader; None when the partition is offline")
    size_bytes: int = Field(ge=0, le=INT64_MAX)
    load: PartitionLoad | None = Field(default=None, description="None: no load data")
    offline_replicas: tuple[Int32, ...] = Field(
        default=(),
        description="replicas Kafka reports offline: their broker lost the log directory "
        "holding them (a failed disk), or is dead",
    )
    eligible_leaders: tuple[Int32, ...] = Field(
        default=(),
        description="Kafka's eligible leader replicas (KIP-966): replicas that left the ISR "
        "while it was below min.insync.replicas and hold every committed record, so Kafka may "
        "elect one without an unclean election; empty: none, or not read",
    )


class Topic(_Frozen):
    name: str = Field(min_length=1)
    partitions: tuple[Partition, ...]
    min_insync_replicas: int | None = Field(
        default=None,
        ge=1,
        le=INT32_MAX,
        description="the topic's effective min.insync.replicas; None: unread",
    )
