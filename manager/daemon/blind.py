"""The decision of a cycle that could not observe the cluster (pure): there is no snapshot to
decide on."""

from __future__ import annotations

from manager.model.decision import Decision, Reason


def blind(why: str) -> Decision:
    """The decision of a cycle that could not observe the cluster: refuse, naming what failed.
    Nothing is known, so nothing is planned; the refusal is audited, and alerted once the
    manager has been blind past its bound (AuditTrail.blind_alerting)."""
    reason = Reason("cluster_unobservable", f"the cluster cannot be observed: {why}")
    return Decision(
        outcome="refuse",
        kind=None,
        summary="nothing is decided while the cluster cannot be observed",
        reasons=(reason,),
    )
