"""A view older than what the daemon saw happen: a gate that waits (pure).

KRaft propagates metadata to the brokers asynchronously, and each read of it is answered by
some broker: a move the executor saw complete (its reassignment gone from the controller's
list) may still show its old replica set in the next cycle's snapshot - say
``[2, 4, 1, 3]`` with ``3`` dead and ``4`` out of the ISR. Judged as it is, that view asks to
heal broker 3 again and finds broker 4 lagging with no explanation: a refusal and a page for
a cluster kmedic has just healed.

So the daemon carries the moves it saw complete, for a bound (``manager.daemon.settling``),
into ``decide`` (``Situation.completed``); a snapshot that contradicts one of them is decided
on no further: a *wait*, which pages nobody. Past the bound the daemon no longer carries the
move, and the planner judges the view as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from manager.analyzer.examples import examples
from manager.model.decision import Decision, Reason
from manager.model.moves import TopicPartition
from manager.model.snapshot import Snapshot
from manager.model.topics import topics_table


@dataclass(frozen=True)
class Completed:
    """A move the executor saw complete: ``tp`` has ``target`` as its replicas."""

    tp: TopicPartition
    target: tuple[int, ...]


@dataclass(frozen=True)
class Contradiction:
    tp: TopicPartition
    seen: tuple[int, ...]
    expected: tuple[int, ...]

    def sentence(self) -> str:
        topic, partition = self.tp
        return (
            f"{topic}:{partition} shows replicas {list(self.seen)}, completed as "
            f"{list(self.expected)}"
        )


def contradictions(snap: Snapshot, completed: Iterable[Completed]) -> list[Contradiction]:
    """The completed moves ``snap`` shows otherwise (a partition deleted since contradicts
    nothing), in partition order."""
    table = topics_table(snap.topics)
    found = []
    for move in sorted(completed, key=lambda c: c.tp):
        row = table.row_of(*move.tp)
        if row is None:
            continue
        replicas = tuple(table.replicas.row(row))
        if replicas != move.target:
            found.append(Contradiction(move.tp, replicas, move.target))
    return found


def describe(found: list[Contradiction]) -> str:
    return examples([c.sentence() for c in found], sep="; ", more="; and {} more")


def behind(found: list[Contradiction]) -> Decision:
    """The wait a view older than the moves seen complete is decided as."""
    why = (
        f"the cluster metadata is older than {len(found)} moves already seen complete "
        f"(a broker's metadata cache lags the controller): {describe(found)}"
    )
    return Decision(
        outcome="wait",
        kind=None,
        summary=why,
        reasons=(Reason("stale_metadata", why, wait=True),),
        view_behind=True,
    )
