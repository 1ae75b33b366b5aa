"""Which offline replicas are a failed log directory.

Kafka reports a replica offline when its broker is fenced or has lost the directory holding it.
The manager reads live brokers (DescribeCluster) and partitions (Metadata) in two requests,
which two brokers may answer from metadata of two moments: a broker fenced between them (just
SIGKILLed, its session expired) then looks live with every replica offline. Taken for a failed
log directory, that would move its replicas at once, skipping the grace period a dead broker
gets. So offline replicas on a live broker count only when the previous read saw them too: a
failed directory stays failed until its broker restarts, while a fencing settles within a read.
A read that sees some for the first time is followed at once by a second one (``unconfirmed``),
so that a failed disk is neither taken on one read's word nor left to look, for a cycle, like
a slow follower that pages.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from kmedic.partition_table import PartitionTable

TopicPartition = tuple[str, int]
OfflineOnLive = dict[TopicPartition, frozenset[int]]


def confirm_offline(
    partitions: PartitionTable, live: set[int], previous: OfflineOnLive
) -> tuple[PartitionTable, OfflineOnLive]:
    """The partitions with offline replicas on live brokers kept only where ``previous`` had
    them too, and this read's offline-on-live replicas (the next read's ``previous``)."""
    seen: OfflineOnLive = {}
    kept: dict[int, tuple[int, ...]] = {}
    offline = partitions.offline
    # Nearly every partition has none: only the rows that do are read, at fleet scale too.
    for i in np.flatnonzero(offline.counts()).tolist():
        key = (partitions.names[int(partitions.topic[i])], int(partitions.partition[i]))
        ids = offline.row(i)
        on_live = frozenset(b for b in ids if b in live)
        if on_live:
            seen[key] = on_live
        unconfirmed = on_live - previous.get(key, frozenset())
        if unconfirmed:
            kept[i] = tuple(b for b in ids if b not in unconfirmed)
    if not kept:
        return partitions, seen
    return replace(partitions, offline=offline.with_rows(kept)), seen


def unconfirmed(seen: OfflineOnLive, previous: OfflineOnLive) -> bool:
    """Whether this read saw offline replicas on a live broker that the previous did not."""
    return any(gone - previous.get(key, frozenset()) for key, gone in seen.items())
