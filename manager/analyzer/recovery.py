"""The last resort's arithmetic (pure): the ways out of an offline partition, each with the
most it can lose, ranked.

A partition is offline when no in-sync replica and no eligible leader (KIP-966) is alive:
Kafka elects none, and writes and reads stop. What is left is a person's choice, and kmedic
never takes it on its own; this module says what each choice would cost, from the evidence
the agents reported sample by sample:

- **wait** for a replica that holds every record: a dead replica last known in sync or
  eligible (Kafka's own word that it holds every committed record), or one whose sampled log
  end reached the newest record the leader can have written. No loss, if it comes back.
- **elect** a live out-of-sync replica (Kafka's unclean election): it lacks at most the
  records between its own sampled log end and the newest record the leader can have written -
  the leader's last sampled log end, plus its write rate over the time from that sample to its
  death. A replica only gains records while it follows, so its sample is a floor of its log
  and the bound never falls short of the loss; it exceeds it by at most the writes of the
  time between the two samples and the leader's death (the evidence's age, said).
- **recreate** the partition empty: loses every record the log held.

The rank: waits first (no loss), an eligible replica before one only its offsets vouch for;
then elections, the smallest bound first, a replica without a sample last; recreation last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from manager.model.last_logs import OfflinePartition
from manager.model.snapshot import Snapshot

WayKind = Literal["wait", "elect", "recreate"]


@dataclass(frozen=True)
class LeaderLog:
    """The last leader's log as its agent last sampled it, and its write rate then."""

    broker: int
    log_start: int
    log_end: int
    sampled_at_ms: int
    messages_per_s: float


@dataclass(frozen=True)
class Survivor:
    """A replica of the offline partition: whether its broker is alive, whether Kafka last
    reported it in sync or eligible, and its log end as its agent last sampled it (None:
    never sampled)."""

    broker: int
    alive: bool
    eligible: bool
    log_end: int | None = None
    sampled_at_ms: int | None = None


@dataclass(frozen=True)
class Way:
    """One way out: what it does, and the most it loses (records; None: no evidence)."""

    kind: WayKind
    broker: int | None
    loses_at_most: int | None
    seconds_of_writes: float | None  # the loss in the leader's writes, at its last rate
    evidence_age_ms: int | None  # how old the oldest sample behind the bound is
    eligible: bool = False  # wait: Kafka last counted it in sync or eligible

    @property
    def name(self) -> str:
        """The way as a person types it back (``kmedic recover --way``)."""
        return self.kind if self.broker is None else f"{self.kind}:{self.broker}"

    def to_dict(self) -> dict[str, object]:
        return {
            "way": self.name,
            "kind": self.kind,
            "broker": self.broker,
            "loses_at_most": self.loses_at_most,
            "seconds_of_writes": self.seconds_of_writes,
            "evidence_age_ms": self.evidence_age_ms,
        }

    def sentence(self, key: str) -> str:
        aged = (
            ""
            if self.evidence_age_ms is None
            else f" (evidence {self.evidence_age_ms / 1000:.0f} s old)"
        )
        if self.kind == "wait":
            held = (
                "which Kafka last counted in sync or eligible: every committed record kept"
                if self.eligible
                else "whose log reached every record its leader can have written: no loss"
            )
            return f"{key}: wait for broker {self.broker}, {held}"
        if self.kind == "elect":
            if self.loses_at_most is None:
                return (
                    f"{key}: elect broker {self.broker}: its loss is unknown (no sample of its log)"
                )
            writes = (
                ""
                if self.seconds_of_writes is None
                else f", about {self.seconds_of_writes:.0f} s of writes"
            )
            return (
                f"{key}: elect broker {self.broker} uncleanly: loses at most "
                f"{self.loses_at_most} records{writes}{aged}"
            )
        held = "every record" if self.loses_at_most is None else f"{self.loses_at_most} records"
        return f"{key}: recreate it empty: loses {held}{aged}"


def newest_offset(leader: LeaderLog, died_at_ms: int) -> int:
    """The newest offset the leader can have written: its last sampled log end, and its write
    rate from that sample to its death (rounded up)."""
    after_s = max(0, died_at_ms - leader.sampled_at_ms) / 1000
    return leader.log_end + math.ceil(leader.messages_per_s * after_s)


def ways_out(
    leader: LeaderLog | None, replicas: Sequence[Survivor], died_at_ms: int, now_ms: int
) -> list[Way]:
    """Every way out of the partition, ranked (the module's docstring says how)."""
    newest = newest_offset(leader, died_at_ms) if leader is not None else None
    rate = leader.messages_per_s if leader is not None else 0.0
    waits: list[tuple[int, Way]] = []
    elections: list[tuple[int, int, Way]] = []
    for r in replicas:
        holds_all = newest is not None and r.log_end is not None and r.log_end >= newest
        if not r.alive:
            if r.eligible or holds_all:
                way = Way("wait", r.broker, 0, 0.0, None, eligible=r.eligible)
                waits.append((0 if r.eligible else 1, way))
            continue
        if r.log_end is None or newest is None or leader is None:
            elections.append((1, 0, Way("elect", r.broker, None, None, None)))
            continue
        lost = max(0, newest - r.log_end)
        oldest = min(leader.sampled_at_ms, r.sampled_at_ms or leader.sampled_at_ms)
        seconds = lost / rate if rate > 0 else None
        way = Way("elect", r.broker, lost, seconds, max(0, now_ms - oldest))
        elections.append((0, lost, way))
    recreate = Way(
        "recreate",
        None,
        None if leader is None or newest is None else max(0, newest - leader.log_start),
        None,
        None if leader is None else max(0, now_ms - leader.sampled_at_ms),
    )
    ranked = [w for _, w in sorted(waits, key=lambda x: (x[0], x[1].broker or 0))]
    ranked += [w for *_, w in sorted(elections, key=lambda x: (x[0], x[1], x[2].broker or 0))]
    return [*ranked, recreate]


def partition_ways(snap: Snapshot, offline: OfflinePartition, now_ms: int) -> list[Way]:
    """The ways out of one of the snapshot's offline partitions, ranked (``ways_out``)."""
    table = snap.topics.table
    row = table.row_of(offline.topic, offline.partition)
    if row is None:  # gone from the metadata since: nothing is left to choose
        return []
    alive = {b.id: b.alive for b in snap.brokers}
    vouched = set(table.isr.row(row))
    if table.eligible is not None:
        vouched.update(table.eligible.row(row))
    logs = {log.broker: log for log in offline.logs}
    survivors = []
    for b in table.replicas.row(row):
        log = logs.get(b)
        survivors.append(
            Survivor(
                broker=b,
                alive=alive.get(b, False),
                eligible=b in vouched,
                log_end=None if log is None else log.log_end,
                sampled_at_ms=None if log is None else log.sampled_at_ms,
            )
        )
    sample = offline.leader
    leader = (
        None
        if sample is None
        else LeaderLog(
            sample.broker,
            sample.log_start,
            sample.log_end,
            sample.sampled_at_ms,
            sample.messages_per_s,
        )
    )
    died = offline.died_at_ms if offline.died_at_ms is not None else now_ms
    return ways_out(leader, survivors, died, now_ms)


def chosen_way(ways: Sequence[Way], key: str, name: str, accepted: int | None) -> Way | str:
    """The way a person typed back (``name``, as ``Way.name`` spells it) if it may be taken
    with the loss they accepted (``accepted``; None: "all", every record), else why not - in
    numbers: a bound grown since they read it is refused, never rounded."""
    found = next((w for w in ways if w.name == name), None)
    if found is None:
        offered = ", ".join(w.name for w in ways) or "none"
        return f"{key}: no way out named {name!r} (the ways now: {offered})"
    if found.kind == "wait":
        return (
            f"{key}: waiting for broker {found.broker} is done by starting it, not by kmedic: "
            "nothing to act on"
        )
    if accepted is None:
        return found
    if found.loses_at_most is None:
        return (
            f"{key}: {name} loses an unknown number of records (no sample to bound it): "
            "accept it with --accept-loss all"
        )
    if found.loses_at_most > accepted:
        return (
            f"{key}: {name} now loses at most {found.loses_at_most} records, more than the "
            f"{accepted} accepted: read the ways again (the bound grew since)"
        )
    return found
