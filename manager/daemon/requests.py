"""The leader's side of operator requests: which open ones the planner sees, and the state
each moves to as the planner serves it (fenced writes, each audited once).

- ``pending`` -> ``running``: the first time a plan for it is started;
- ``pending``/``running`` -> ``done``: the planner finds its goal met;
- ``pending`` -> ``failed``: it names a broker or a topic the cluster does not have (it never
  can be met).
- ``running`` -> ``partial`` or ``failed``: it does not converge. A plan that starts the very
  same moves as the plan before it made no progress (a demote whose preferred leader does not
  take over: out of the ISR, its election refused, or taken while another broker still
  leads); once such plans have gone on for ``CONVERGE_BUDGET_S`` (and at least
  ``MAX_SAME_PLANS`` of them) the request ends, naming the partitions that did not move and
  why each one's last move failed, as the executor said - ``partial`` when earlier plans for
  it made progress,
  ``failed`` when none did - never an endless loop. The budget is generous: an election may
  wait for a replica to rejoin the ISR.

A request an operator cancelled is no longer open: the planner stops planning for it, and the
moves already in flight finish.

The brokers a drain or decommission holds cordoned (manager.model.cordons) go to the planner
as such (they receive nothing), and Kafka's cordon of each is kept as the rule says
(manager.daemon.cordoning). A drain that is done is served again while a broker it holds
cordoned holds replicas again (a partition created there where Kafka cannot cordon, or
assigned there by hand): they move off as its first plan moved the others, and the request
stays done.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from kmedic.errors import KmedicError, LeaseEnded
from kmedic.logging import get_logger
from kmedic.partition_table import PartitionTable
from manager.analyzer.request_check import Asked, ClusterFacts, never_met
from manager.coordination.request_store import RequestState, StoredRequest
from manager.daemon.audit_trail import AuditTrail
from manager.daemon.cordoning import CordonKeeper
from manager.daemon.ports import Coordinator, Executor
from manager.model.cordons import CordonIntent, cordon_intents
from manager.model.decision import Decision
from manager.model.policy import Policy
from manager.model.snapshot import Broker, OperatorRequest, Snapshot
from manager.model.topics import Topics, topics_table
from manager.monitor.carried import ServeRequests
from manager.web.metrics import ManagerMetrics

log = get_logger(__name__)

# Plans that start the same moves as the plan before them, and for how long, before a
# request ends unconverged.
MAX_SAME_PLANS = 3
CONVERGE_BUDGET_S = 300.0
MAX_NAMED = 10


class MoveFailures(Protocol):
    def last_failures(self, partitions: Iterable[str]) -> dict[str, str]:
        """Why the last move of each partition ("topic:partition") failed, if it did."""


class RequestFollower:
    def __init__(
        self,
        coordinator: Coordinator,
        trail: AuditTrail,
        metrics: ManagerMetrics,
        monotonic: Callable[[], float],
        executor: Executor,
        moves: MoveFailures,
    ) -> None:
        self.coordinator = coordinator
        self._executor = executor  # Kafka's UnregisterBroker, for a decommission
        self._moves = moves  # why each partition's last move failed
        self._monotonic = monotonic
        self.trail = trail
        self.metrics = metrics
        self.latest: tuple[StoredRequest, ...] = ()  # as last read, for the status page
        self.cordons = CordonKeeper(
            executor.cordons, coordinator.cordon_ledger, trail, may_act=coordinator.may_act
        )
        # Per request: the partitions of its last started plan, how many plans in a row
        # started exactly those and since when, and whether any plan before made progress.
        self._plans: dict[str, tuple[frozenset[str], int, float, bool]] = {}

    def serving(self, requests: Sequence[StoredRequest]) -> ServeRequests | None:
        """What the cycle's snapshot build asks of the requests read (manager.monitor.carried);
        None: there are none."""
        if not requests:
            return None
        return lambda brokers, topics, policy: self.served(requests, brokers, topics, policy)

    def served(
        self,
        requests: Sequence[StoredRequest],
        brokers: tuple[Broker, ...],
        topics: Topics,
        policy: Policy,
    ) -> tuple[tuple[OperatorRequest, ...], tuple[Broker, ...]]:
        """The requests the planner may serve (a done drain upheld first, then the open ones,
        oldest first), and the brokers cordoned where a drain holds one: a broker some drain or
        decommission named is cordoned as the requests say, others as their agents read them."""
        table = topics_table(topics)
        intents = cordon_intents(requests)
        held = frozenset(b for b, intent in intents.items() if intent.held)
        upheld = [
            OperatorRequest(
                id=r.id, kind="drain", brokers=again, created_ms=r.created_ms, upheld=True
            )
            for r in requests
            if r.kind == "drain" and r.state == "done"
            for again in [_holding_again(table, r, intents)]
            if again
        ]
        facts = ClusterFacts.of_table({b.id: b.rack for b in brokers}, table, policy)
        opened = self.for_planner(requests, facts)
        # kmedic's own word for the brokers a request decides (the agents' lags a sample):
        # held, or released from its own cordon; a cordon it did not write stays as read.
        coord = self.coordinator
        mine = (self.cordons.mine(coord.epoch) if coord.may_act() else self.cordons.owned) or {}
        cordoned = tuple(
            b.model_copy(update={"cordoned": b.id in held or (b.cordoned and b.id not in mine)})
            if b.id in intents
            else b
            for b in brokers
        )
        return (*upheld, *opened), cordoned

    def cordon(self, requests: Iterable[StoredRequest], snap: Snapshot) -> None:
        """Kafka's cordons as the requests hold them (the leader, while writing)."""
        alive = (b.id for b in snap.brokers if b.alive)
        self.cordons.follow(requests, alive, self.coordinator.epoch)

    def for_planner(
        self, requests: Iterable[StoredRequest], facts: ClusterFacts
    ) -> tuple[OperatorRequest, ...]:
        """The open requests the planner may serve, oldest first; as the leader, one that can
        never be met (manager.analyzer.request_check) is failed with why, so that it does not
        hold the queue behind it."""
        known = facts.brokers
        found = list(requests)
        self.latest = tuple(found)
        self.metrics.observe_requests(Counter(r.state for r in found))
        out = []
        for r in found:
            if not r.open:
                continue
            unknown = sorted(set(r.brokers) - known)
            if unknown and r.kind == "decommission" and not set(r.brokers) & known:
                # Unregistered already (by this request, or by hand): nothing is left to do.
                if self.coordinator.may_act():
                    self._move(r, "done", f"brokers {unknown} are no longer in the cluster")
                continue
            asked = Asked(r.kind, r.brokers, r.topic, r.replication_factor)
            why = never_met(asked, facts) if r.state == "pending" else None
            if why is None and unknown:  # a running request whose broker left meanwhile
                why = f"the cluster has no broker {unknown}"
            if why is not None:
                if self.coordinator.may_act():
                    self._move(r, "failed", why)
                continue
            out.append(r.for_planner())
        return tuple(out)

    def follow(
        self,
        decision: Decision,
        requests: Iterable[StoredRequest],
        started: bool,
        writing: bool = True,
    ) -> None:
        """Move the request ``decision`` served to its next state, if it has one; a
        decommission's stopped, empty brokers are unregistered first (only while ``writing``:
        act mode, a quorum with a leader)."""
        if decision.request is None:
            return
        request = next((r for r in requests if r.id == decision.request), None)
        if request is None or not request.open:
            return
        if decision.unregister:
            # Not while held back (observe mode, or policy.goals.operator_requests off).
            if writing and decision.would_act is None and self.coordinator.may_act():
                self._unregister_all(request, decision.unregister)
            return
        note = _note(request, decision.summary)
        if decision.request_done:
            self._plans.pop(request.id, None)
            self._move(request, "done", note)
            return
        if not started:
            return
        if self._stuck(request, decision):
            return
        if request.state == "pending":
            self._move(request, "running", note)

    def _stuck(self, request: StoredRequest, decision: Decision) -> bool:
        """Count a started plan; end the request when it keeps starting the same moves."""
        moved = frozenset(f"{a.topic}:{a.partition}" for a in decision.actions)
        now = self._monotonic()
        last, same, since, progressed = self._plans.get(request.id, (frozenset(), 0, now, False))
        same, since = (same + 1, since) if moved == last else (1, now)
        progressed = progressed or bool(last and last - moved)
        self._plans[request.id] = (moved, same, since, progressed)
        if same <= MAX_SAME_PLANS or now - since < CONVERGE_BUDGET_S:
            return False
        names = sorted(moved)
        shown = ", ".join(names[:MAX_NAMED]) + (
            f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
        )
        why = (
            f"did not converge: {same} plans in a row over {now - since:.0f} s started the same "
            f"{len(names)} moves and the cluster still asks for them: {shown}"
        )
        failed = self._moves.last_failures(names)
        if failed:
            told = [f"{p}: {failed[p]}" for p in sorted(failed)[:MAX_NAMED]]
            more = len(failed) - len(told)
            why += "; why: " + "; ".join(told) + (f"; and {more} more" if more > 0 else "")
        self._plans.pop(request.id, None)
        self._move(request, "partial" if progressed else "failed", why)
        return True

    def _unregister_all(self, request: StoredRequest, brokers: tuple[int, ...]) -> None:
        """Each broker unregistered and audited; the request done once all are."""
        for broker in brokers:
            try:
                self._executor.unregister_broker(broker)
            except LeaseEnded as exc:  # no longer this instance's to do: the next leader does it
                log.info("unregister_left_to_the_next_leader", broker=broker, why=str(exc))
                return
            except KmedicError as exc:  # the next cycle tries again
                self.trail.record(
                    "action_failed",
                    f"unregister broker {broker} (request {request.id}) failed: {exc}",
                    details={"request": request.id, "broker": broker},
                )
                return
            self.trail.record(
                "action_completed",
                f"unregistered broker {broker} from the cluster (request {request.id}): it was "
                "stopped and held no replica, leadership or reassignment",
                details={"request": request.id, "broker": broker},
            )
        said = f"brokers {list(brokers)} drained, stopped and unregistered"
        self._move(request, "done", said)

    def _move(self, request: StoredRequest, state: RequestState, note: str) -> None:
        try:
            updated = self.coordinator.requests.mark(request, state, note)
        except KmedicError as exc:  # fenced, or cancelled meanwhile: the next cycle reads again
            log.warning("request_update_failed", request=request.id, state=state, error=str(exc))
            return
        # The status page shows the requests as this cycle left them: one it just marked done
        # read "running" beside a last decision saying it was done.
        self.latest = tuple(updated if r.id == updated.id else r for r in self.latest)
        self.trail.record(
            "decision",
            updated.sentence(),
            details={"request": updated.document()},
        )


def _holding_again(
    table: PartitionTable, drain: StoredRequest, intents: Mapping[int, CordonIntent]
) -> tuple[int, ...]:
    """The brokers of a done ``drain`` it still holds cordoned (no later request decides
    them) that hold replicas again."""
    replicas = table.replicas
    return tuple(
        b
        for b in drain.brokers
        if intents[b].held and intents[b].request == drain.id and replicas.rows_with([b]).size
    )


def _note(request: StoredRequest, summary: str) -> str:
    """The decision's summary without the request's own name, which the request's sentence
    already starts with ("request req-7 (drain brokers 4): 9 partitions reassigned, ..." is
    stored as "9 partitions reassigned, ...")."""
    head = f"request {request.id} ({request.subject})"
    if not summary.startswith(head):
        return summary
    return summary[len(head) :].removeprefix(" is done").removeprefix(":").strip()
