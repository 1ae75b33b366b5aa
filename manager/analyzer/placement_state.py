"""The planner's working state: per-partition arrays and per-broker load sums, built once.

Built from an immutable Snapshot in one pass; heal and balance then apply tentative moves to it
(load reservations), so every later choice sees the load earlier choices put on a broker.

Load model (documented in docs/planner.md): the leader replica carries the partition's bytes
in, bytes out and messages in; each follower carries bytes in (its replication fetch); every
replica carries the partition's size on disk.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from manager.analyzer.kept_out import KeptOut
from manager.analyzer.partition_lists import ListsMemory
from manager.analyzer.recovery import partition_ways
from manager.model.racks import Location, location_of
from manager.model.snapshot import Capacity, Snapshot
from manager.model.topics import topics_table


class ClusterState:
    """Mutable, index-based view of a snapshot; partitions are numbered 0..n-1."""

    def __init__(
        self, snap: Snapshot, *, use_loads: bool = True, memory: ListsMemory | None = None
    ) -> None:
        """``use_loads=False``: every partition's traffic counts as zero, and targets are
        ranked by disk use, then replica count (a heal while the loads are stale).
        ``memory``: where the per-partition lists are kept between builds (the daemon's;
        None: this state's own, handed on to what is made from it)."""
        policy = snap.policy
        self.memory = memory or ListsMemory()
        self.use_loads = use_loads
        self.policy = policy
        self.kind = policy.placement
        self.broker_ids: list[int] = sorted(b.id for b in snap.brokers)
        self.alive: dict[int, bool] = {}
        self.loc: dict[int, Location] = {}
        self.domain: dict[int, str] = {}
        self.cap_in: dict[int, float] = {}
        self.cap_out: dict[int, float] = {}
        self.cap_disk: dict[int, float] = {}
        explicit = {b: d.name for d in snap.failure_domains for b in d.brokers}
        disk_used: dict[int, int | None] = {}
        for b in snap.brokers:
            cap = b.capacity or snap.default_capacity
            assert isinstance(cap, Capacity)  # guaranteed by snapshot validation
            self.alive[b.id] = b.alive
            self.loc[b.id] = location_of(b.rack, self.kind)
            self.domain[b.id] = explicit.get(b.id, self.loc[b.id].rack)
            self.cap_in[b.id] = cap.network_in_bytes_per_s
            self.cap_out[b.id] = cap.network_out_bytes_per_s
            self.cap_disk[b.id] = float(cap.disk_bytes)
            disk_used[b.id] = b.disk_used_bytes
        lim = policy.limits
        self.lim_in = {b: c * lim.network_in_fraction for b, c in self.cap_in.items()}
        self.lim_out = {b: c * lim.network_out_fraction for b, c in self.cap_out.items()}
        self.lim_disk = {b: c * lim.disk_fraction for b, c in self.cap_disk.items()}
        self.dead: list[int] = [b for b in self.broker_ids if not self.alive[b]]
        self.kept_out = KeptOut.of(snap, self.domain)

        self.topic: list[str] = []
        self.number: list[int] = []
        self.replicas: list[tuple[int, ...]] = []
        self.isr: list[tuple[int, ...]] = []
        self.leader: list[int | None] = []
        self.size: Sequence[int] = []
        self.bin: Sequence[float] = []
        self.bout: Sequence[float] = []
        self.msgs: Sequence[float] = []
        self.valid_load = 0
        self.load_in = dict.fromkeys(self.broker_ids, 0.0)
        self.load_out = dict.fromkeys(self.broker_ids, 0.0)
        self.load_msgs = dict.fromkeys(self.broker_ids, 0.0)
        self.count = dict.fromkeys(self.broker_ids, 0)
        self.leaders = dict.fromkeys(self.broker_ids, 0)
        sizes = dict.fromkeys(self.broker_ids, 0.0)
        self._load_partitions(snap, sizes)
        self.load_disk = {
            b: float(u) if (u := disk_used[b]) is not None else sizes[b] for b in self.broker_ids
        }
        rows = (topics_table(snap.topics).row_of(r.topic, r.partition) for r in snap.reassignments)
        self.reassigning: frozenset[int] = frozenset(p for p in rows if p is not None)
        others = {(r.topic, r.partition) for r in snap.reassignments if not r.started_by_kmedic}
        self.foreign: frozenset[int] = (
            frozenset(p for p in self.reassigning if (self.topic[p], self.number[p]) in others)
            if others
            else frozenset()
        )
        self._isolation = _isolation_sets(snap)
        self.aa_group: dict[str, str] = {
            t: g.name for g in snap.anti_affinity_groups for t in g.topics
        }
        self.aa_domain: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        self.aa_broker: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
        if self.aa_group:
            for p, t in enumerate(self.topic):
                g = self.aa_group.get(t)
                if g is not None:
                    for rb in self.replicas[p]:
                        self._aa_add(g, rb, 1)
        self._by_broker: dict[int, list[int]] | None = None

    def _load_partitions(self, snap: Snapshot, sizes: dict[int, float]) -> None:
        """The per-partition lists and per-broker sums, from the snapshot's columns: the sums
        by ``np.bincount``, which adds in partition order as a loop would (the same floats)."""
        table = self.table = topics_table(snap.topics)  # as observed (the lists below move)
        n = len(table)
        lists = self.memory.lists(snap.topics)  # shared with every index of this table
        self.topic, self.number, self.size = lists.topic, lists.number, lists.size
        self.replicas, self.isr = list(lists.replicas), list(lists.isr)
        self.leader = list(lists.leader)
        leader = table.leader
        size = table.size if table.size is not None else np.zeros(n, dtype=np.int64)
        loads = table.loads
        if self.use_loads and loads is not None:
            known = loads.known
            bin_, bout, msgs = (
                np.where(known, column, 0.0)
                for column in (loads.bytes_in, loads.bytes_out, loads.messages_in)
            )
            self.bin, self.bout, self.msgs = lists.bin, lists.bout, lists.msgs
            self.valid_load = lists.valid_load
        else:
            bin_ = bout = msgs = np.zeros(n)
            self.bin, self.bout, self.msgs = [0.0] * n, [0.0] * n, [0.0] * n
            self.valid_load = 0

        rep_counts = table.replicas.counts()
        dense = _dense(self.broker_ids)
        holder = dense(table.replicas.values)  # each replica's broker, densely
        row = lists.replica_row
        led = np.flatnonzero(leader >= 0)
        lead = dense(leader[led])
        brokers = len(self.broker_ids)
        for sums, values in (
            (self.load_in, np.bincount(holder, weights=bin_[row], minlength=brokers)),
            (sizes, np.bincount(holder, weights=size[row].astype(np.float64), minlength=brokers)),
            (self.load_out, np.bincount(lead, weights=bout[led], minlength=brokers)),
            (self.load_msgs, np.bincount(lead, weights=msgs[led], minlength=brokers)),
        ):
            # (An empty bincount is of ints, whatever its weights.)
            sums.update(zip(self.broker_ids, values.astype(np.float64).tolist(), strict=True))
        for counts, at in ((self.count, holder), (self.leaders, lead)):
            counts.update(
                zip(self.broker_ids, np.bincount(at, minlength=brokers).tolist(), strict=True)
            )

        alive = self.alive
        min_insync = table.min_insync
        degraded = np.flatnonzero((leader < 0) | (table.isr.counts() < rep_counts)).tolist()
        writes_unavailable = []
        for p in degraded:
            lead_p = self.leader[p]
            needed = int(min_insync[table.topic[p]]) if min_insync is not None else 0
            if (
                needed
                and lead_p is not None
                and alive.get(lead_p, False)
                and sum(alive.get(b, False) for b in self.isr[p]) < needed
            ):
                writes_unavailable.append(p)
        offline: dict[int, frozenset[int]] = {}
        for p in np.flatnonzero(table.offline.counts()).tolist():
            # Offline on a live broker: a failed log directory. A dead broker's replicas are
            # lost with the broker and counted there.
            gone = frozenset(b for b in table.offline.row(p) if alive.get(b, False))
            if gone:
                offline[p] = gone
        eligible = table.eligible
        # Partition -> live brokers whose copy of it is offline (their log directory failed).
        self.offline: dict[int, frozenset[int]] = offline
        # Partitions as observed under-replicated or without a leader (the gates look only at
        # these: one pass over millions of partitions is enough).
        self.degraded: tuple[int, ...] = tuple(degraded)
        # Partitions led by a live broker whose live in-sync replicas are fewer than their
        # topic's min.insync.replicas: Kafka rejects acks=all writes to them now. (Without a
        # live leader nothing can be copied: such a partition waits like any other.)
        self.writes_unavailable: tuple[int, ...] = tuple(writes_unavailable)
        # Partition -> Kafka's eligible leader replicas (KIP-966), for those that have any.
        self.eligible: dict[int, tuple[int, ...]] = (
            {p: eligible.row(p) for p in np.flatnonzero(eligible.counts()).tolist()}
            if eligible is not None
            else {}
        )
        # Partition -> the best way out of it, for those offline with no replica Kafka would
        # elect (manager.analyzer.recovery): a person's choice, named in the refusal.
        self.last_resort: dict[int, str] = {}
        for off in snap.offline_partitions:
            found = table.row_of(off.topic, off.partition)
            ways = partition_ways(snap, off, snap.taken_at)
            if found is not None and ways:
                self.last_resort[found] = ways[0].sentence(f"{off.topic}:{off.partition}")

    # -- queries -------------------------------------------------------------------------------

    @property
    def partition_count(self) -> int:
        return len(self.topic)

    def name(self, p: int) -> str:
        return f"{self.topic[p]}:{self.number[p]}"

    def usable(self, b: int) -> bool:
        """A broker that may gain or lose replicas or leadership (a broker being drained may
        only lose them; one a move stalled on is left alone until it is trusted again, one
        someone else's reassignment adds or removes until it ends)."""
        return self.alive[b] and b not in self.kept_out

    def allowed_sets(self, p: int) -> tuple[frozenset[int], ...] | None:
        """Broker sets the partition may live on, most preferred first; None: anywhere."""
        return self._isolation.get(self.topic[p])

    def topic_sets(self, topic: str) -> tuple[frozenset[int], ...] | None:
        return self._isolation.get(topic)

    def net_util(self, b: int) -> float:
        return (self.load_in[b] + self.load_out[b]) / (self.cap_in[b] + self.cap_out[b])

    def load_key(self, b: int) -> float:
        """How loaded a broker is when picking the least-loaded target."""
        if not self.use_loads:
            # Share of disk used; among equals, the broker with fewer replicas (a replica is
            # worth far less than the smallest share of disk that can be told apart).
            return self.load_disk[b] / self.cap_disk[b] + self.count[b] * 1e-12
        if self.policy.prefer_emptier_disks:
            return self.load_disk[b] / self.cap_disk[b]
        return self.net_util(b)

    def fits(
        self, b: int, d_in: float, d_out: float, d_disk: float, *, adds_replica: bool = True
    ) -> bool:
        """Would ``b`` stay within its limits after gaining this load (and maybe a replica)?"""
        cap = self.policy.max_replicas_per_broker
        return (
            (d_in <= 0 or self.load_in[b] + d_in <= self.lim_in[b])
            and (d_out <= 0 or self.load_out[b] + d_out <= self.lim_out[b])
            and (d_disk <= 0 or self.load_disk[b] + d_disk <= self.lim_disk[b])
            and (not adds_replica or cap is None or self.count[b] + 1 <= cap)
        )

    def over_limits(self, b: int) -> list[str]:
        over = []
        if self.load_in[b] > self.lim_in[b]:
            over.append("network_in")
        if self.load_out[b] > self.lim_out[b]:
            over.append("network_out")
        if self.load_disk[b] > self.lim_disk[b]:
            over.append("disk")
        return over

    def partitions_on(self, b: int) -> list[int]:
        """Partitions with a replica on ``b`` (index built on first use, kept up to date)."""
        if self._by_broker is None:
            index: dict[int, list[int]] = {x: [] for x in self.broker_ids}
            for p, reps in enumerate(self.replicas):
                for x in reps:
                    index[x].append(p)
            self._by_broker = index
        return self._by_broker[b]

    def in_sync(self, p: int) -> bool:
        return len(self.isr[p]) == len(self.replicas[p])

    # -- moves (reservations) ------------------------------------------------------------------

    def move_replica(self, p: int, old: int, new: int) -> None:
        """Replace ``old`` by ``new`` in partition ``p``; a leader replica hands over its role."""
        reps = self.replicas[p]
        was_leader = self.leader[p] == old
        if was_leader:
            # The new broker goes first: when the move completes Kafka elects it (first in-sync
            # replica of the target list), so the prediction matches what will happen.
            self.replicas[p] = (new, *(x for x in reps if x != old))
        else:
            self.replicas[p] = tuple(new if x == old else x for x in reps)
        self.isr[p] = tuple(new if x == old else x for x in self.isr[p])
        bi, size = self.bin[p], self.size[p]
        self.load_in[old] -= bi
        self.load_in[new] += bi
        self.load_disk[old] -= size
        self.load_disk[new] += size
        self.count[old] -= 1
        self.count[new] += 1
        if was_leader:
            self._shift_leader(p, old, new)
        g = self.aa_group.get(self.topic[p])
        if g is not None:
            self._aa_add(g, old, -1)
            self._aa_add(g, new, 1)
        if self._by_broker is not None:
            self._by_broker[old].remove(p)
            self._by_broker[new].append(p)

    def add_replica(self, p: int, new: int) -> None:
        """Give partition ``p`` one more replica, on ``new``, last in its list (the preferred
        leader stays); predicted in sync, as it will be once its copy completes."""
        self.replicas[p] = (*self.replicas[p], new)
        self.isr[p] = (*self.isr[p], new)
        self.load_in[new] += self.bin[p]
        self.load_disk[new] += self.size[p]
        self.count[new] += 1
        g = self.aa_group.get(self.topic[p])
        if g is not None:
            self._aa_add(g, new, 1)
        if self._by_broker is not None:
            self._by_broker[new].append(p)

    def drop_replica(self, p: int, new: int) -> None:
        """Take back ``add_replica(p, new)``."""
        self.replicas[p] = tuple(x for x in self.replicas[p] if x != new)
        self.isr[p] = tuple(x for x in self.isr[p] if x != new)
        self.load_in[new] -= self.bin[p]
        self.load_disk[new] -= self.size[p]
        self.count[new] -= 1
        g = self.aa_group.get(self.topic[p])
        if g is not None:
            self._aa_add(g, new, -1)
        if self._by_broker is not None:
            self._by_broker[new].remove(p)

    def reserve(self, topic: str, b: int, d_in: float, d_out: float, size: int) -> None:
        """Account a new replica (of a partition not in the snapshot) on ``b``."""
        self.load_in[b] += d_in
        self.load_out[b] += d_out
        self.load_disk[b] += size
        self.count[b] += 1
        g = self.aa_group.get(topic)
        if g is not None:
            self._aa_add(g, b, 1)

    def set_replicas(self, p: int, replicas: tuple[int, ...]) -> None:
        """Reorder replicas (no data movement)."""
        self.replicas[p] = replicas

    def move_leader(self, p: int, new: int) -> None:
        old = self.leader[p]
        assert old is not None and new in self.replicas[p]
        self.replicas[p] = (new, *(x for x in self.replicas[p] if x != new))
        self._shift_leader(p, old, new)

    def _shift_leader(self, p: int, old: int, new: int) -> None:
        self.load_out[old] -= self.bout[p]
        self.load_out[new] += self.bout[p]
        self.load_msgs[old] -= self.msgs[p]
        self.load_msgs[new] += self.msgs[p]
        self.leaders[old] -= 1
        self.leaders[new] += 1
        self.leader[p] = new

    def _aa_add(self, group: str, b: int, delta: int) -> None:
        self.aa_domain[group][self.domain[b]] += delta
        self.aa_broker[group][b] += delta


def _isolation_sets(snap: Snapshot) -> dict[str, tuple[frozenset[int], ...]]:
    groups = {g.name: frozenset(g.brokers) for g in snap.broker_groups}
    out: dict[str, tuple[frozenset[int], ...]] = {}
    for ig in snap.isolation_groups:
        sets = [groups[ig.primary]]
        if ig.secondary is not None:
            sets.append(groups[ig.secondary])
        for t in ig.topics:
            out[t] = tuple(sets)
    return out


def _dense(ids: list[int]) -> Callable[[npt.NDArray[np.int32]], npt.NDArray[np.intp]]:
    """Broker ids to their index in ``ids`` (sorted; every id looked up is among them): one
    gather from a lookup array where the ids are small enough, else a binary search."""
    if ids and ids[-1] < (1 << 20):
        lookup = np.zeros(ids[-1] + 1, dtype=np.intp)
        lookup[ids] = np.arange(len(ids))
        return lambda values: lookup[values]
    sorted_ids = np.array(ids, dtype=np.int64)
    return lambda values: np.searchsorted(sorted_ids, values)
