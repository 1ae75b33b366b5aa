"""What the daemon carries into the cycle's one snapshot build (Patroni's cluster loaded once per
cycle, never rewritten): the moves the executor has in flight, the brokers its progress watchdog
found stalled, each live broker's slowness, and the operator requests with the cordons they hold.
``manager.monitor.observe.build_snapshot`` takes them as inputs; nothing amends the snapshot
after it is built.

The slowness and the requests are judged by their keepers (``manager.daemon.slow_tracker``,
``manager.daemon.requests``), handed in as callables, because each keeps memory from cycle to
cycle; each is given the brokers and topics the build has read so far, and answers the brokers
as it sees them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from manager.model.moves import Move
from manager.model.policy import Policy
from manager.model.snapshot import Broker, OperatorRequest, Reassignment
from manager.model.topics import Topics, topics_table

Brokers = tuple[Broker, ...]
# (brokers, topics, policy, taken_at_ms) -> the brokers, each with its slowness.
JudgeSlowness = Callable[[Brokers, Topics, Policy, int], Brokers]
# (brokers, topics, policy) -> the requests the planner may serve, and the brokers cordoned as
# the requests hold them.
ServeRequests = Callable[[Brokers, Topics, Policy], tuple[tuple[OperatorRequest, ...], Brokers]]


@dataclass(frozen=True)
class Carried:
    in_flight: Sequence[Move] = ()
    stalled: Mapping[int, int] = field(default_factory=dict)  # broker -> when, epoch ms
    slowness: JudgeSlowness | None = None
    requests: ServeRequests | None = None


NOTHING = Carried()


def in_flight_listed(
    observed: tuple[Reassignment, ...], in_flight: Sequence[Move], topics: Topics
) -> tuple[Reassignment, ...]:
    """The reassignments with every move kmedic has in flight listed. The reassignment list
    and the partitions' metadata are two reads, answered by different brokers: a move the
    controller just finished can be gone from the list while the metadata still shows its new
    replica catching up - unexplained under-replication, a refusal and a page in the middle of
    kmedic's own heal. A move is in flight until the executor sees it complete, whatever one
    read says."""
    listed = {(r.topic, r.partition) for r in observed}
    missing = {m.tp: m for m in in_flight if m.tp not in listed}
    if not missing:
        return observed
    table = topics_table(topics)
    found = {row: move for tp, move in missing.items() if (row := table.row_of(*tp)) is not None}
    added = []
    for row, move in sorted(found.items()):  # in the snapshot's order
        isr, replicas = table.isr.row(row), table.replicas.row(row)
        added.append(
            Reassignment(
                topic=move.topic,
                partition=move.partition,
                adding_replicas=tuple(b for b in move.target if b not in isr),
                removing_replicas=tuple(b for b in replicas if b not in move.target),
                started_by_kmedic=True,
            )
        )
    return (*observed, *added)


def stalled_marked(brokers: Brokers, stalled: Mapping[int, int]) -> Brokers:
    """The brokers the progress watchdog recently cancelled a move to, marked, so that the
    replan sends their replicas elsewhere."""
    if not stalled:
        return brokers
    return tuple(
        b.model_copy(update={"stalled_at_ms": stalled[b.id]}) if b.id in stalled else b
        for b in brokers
    )
