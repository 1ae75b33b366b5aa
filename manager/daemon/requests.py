"""The leader's side of operator requests: which open ones the planner sees, and the state
each moves to as the planner serves it (fenced writes, each audited once).

- ``pending`` -> ``running``: the first time a plan for it is started;
- ``pending``/``running`` -> ``done``: the planner finds its goal met;
- ``pending`` -> ``failed``: it names a broker the cluster does not have (it never can be met).

A request an operator cancelled is no longer open: the planner stops planning for it, and the
moves already in flight finish.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from kmedic.errors import KmedicError
from kmedic.logging import get_logger
from manager.coordination.request_store import RequestState, StoredRequest
from manager.daemon.audit_trail import AuditTrail
from manager.daemon.ports import Coordinator
from manager.model.decision import Decision
from manager.model.snapshot import OperatorRequest
from manager.web.metrics import ManagerMetrics

log = get_logger(__name__)


class RequestFollower:
    def __init__(
        self, coordinator: Coordinator, trail: AuditTrail, metrics: ManagerMetrics
    ) -> None:
        self.coordinator = coordinator
        self.trail = trail
        self.metrics = metrics
        self.latest: tuple[StoredRequest, ...] = ()  # as last read, for the status page

    def for_planner(
        self, requests: Iterable[StoredRequest], brokers: Iterable[int]
    ) -> tuple[OperatorRequest, ...]:
        """The open requests the planner may serve, oldest first; as the leader, one naming a
        broker the cluster does not have is failed (it could never be met)."""
        known = set(brokers)
        found = list(requests)
        self.latest = tuple(found)
        self.metrics.observe_requests(Counter(r.state for r in found))
        out = []
        for r in found:
            if not r.open:
                continue
            unknown = sorted(set(r.brokers) - known)
            if unknown:
                if self.coordinator.is_leader:
                    self._move(r, "failed", f"the cluster has no broker {unknown}")
                continue
            out.append(r.for_planner())
        return tuple(out)

    def follow(self, decision: Decision, requests: Iterable[StoredRequest], started: bool) -> None:
        """Move the request ``decision`` served to its next state, if it has one."""
        if decision.request is None:
            return
        request = next((r for r in requests if r.id == decision.request), None)
        if request is None or not request.open:
            return
        note = _note(request, decision.summary)
        if decision.request_done:
            self._move(request, "done", note)
        elif started and request.state == "pending":
            self._move(request, "running", note)

    def _move(self, request: StoredRequest, state: RequestState, note: str) -> None:
        try:
            updated = self.coordinator.requests.mark(request, state, note)
        except KmedicError as exc:  # fenced, or cancelled meanwhile: the next cycle reads again
            log.warning("request_update_failed", request=request.id, state=state, error=str(exc))
            return
        self.trail.record(
            "decision",
            updated.sentence(),
            details={"request": updated.document()},
        )


def _note(request: StoredRequest, summary: str) -> str:
    """The decision's summary without the request's own name, which the request's sentence
    already starts with ("request req-7 (drain brokers 4): 9 partitions reassigned, ..." is
    stored as "9 partitions reassigned, ...")."""
    head = f"request {request.id} ({request.kind} brokers {', '.join(map(str, request.brokers))})"
    if not summary.startswith(head):
        return summary
    return summary[len(head) :].removeprefix(" is done").removeprefix(":").strip()
