"""Which live brokers are in a controlled shutdown, and since when.

A broker stopped cleanly (SIGTERM: a rolling restart, a deploy) asks the controller to shut it
down. In one metadata batch the controller moves every leadership it held to another replica
and takes it out of every ISR (KRaft's ``ReplicationControlManager``: where it is the last
in-sync replica, the partition is left without a leader instead). Then, once the broker has
stopped, the controller fences it and it leaves the registrations: dead, in its grace. For the
second or so between the two, the broker is still registered and every partition it holds
lists it outside the ISR: read as it stands, that is a live broker lagging for no known reason,
a refusal and a pending page in the middle of a routine restart.

No Admin API says "in controlled shutdown", so the metadata's own shape says it: a live broker
that leads no partition, holds at least one replica, and is in the ISR of no partition that has
a leader. A broker that lags for any other reason keeps the leaderships it has (its ISR shrinks
to itself), so the shape is the controller's doing. One that leads nothing because Kafka never
gave it a leadership, and lags everywhere, has the same shape; the snapshot's rule
(``Broker.shutting_down``) therefore explains the shape only for a bounded time after it was
first seen.

The shape is pure (``shutting_down``); the memory of when each broker was first seen in it is
``Shutdowns``, kept by the cycle's sources.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np

from kmedic.partition_table import PartitionTable


def shutting_down(table: PartitionTable, live: Collection[int]) -> frozenset[int]:
    """The live brokers in the shape of a controlled shutdown: holding a replica, leading no
    partition, in the ISR of no partition with a leader."""
    holding = np.unique(table.replicas.values)
    leading = np.unique(table.leader[table.leader >= 0])
    led = table.leader[table.isr.value_rows()] >= 0
    in_sync = np.unique(table.isr.values[led])
    candidates = np.setdiff1d(np.setdiff1d(holding, leading), in_sync)
    return frozenset(int(b) for b in candidates.tolist() if int(b) in live)


@dataclass
class Shutdowns:
    """When each live broker was first seen in the shape, while it stays in it."""

    since_ms: dict[int, int] = field(default_factory=dict)

    def saw(self, shaped: frozenset[int], now_ms: int) -> dict[int, int]:
        """One cycle's brokers in the shape at ``now_ms``; each one's first sight of this spell
        (a broker out of the shape, or gone, starts again the next time)."""
        self.since_ms = {b: self.since_ms.get(b, now_ms) for b in shaped}
        return dict(self.since_ms)
