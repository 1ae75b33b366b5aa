"""What a cycle's ZooKeeper read says, as one JSON document: who leads and with which epoch,
the mode, the goal switches, the in-flight plan (where its leader last said it stood, ETA
included), the open requests and the domains in maintenance. ``kmedic status --json`` prints
it and the HTTP API serves it, so both say the same from any manager."""

from __future__ import annotations

from typing import Any

from manager.coordination.plan_store import StoredPlan
from manager.coordination.state import CoordinationState


def state_document(cluster: str, state: CoordinationState) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "leader": state.leader.model_dump() if state.leader else None,
        "epoch": state.current_epoch,
        "mode": state.mode.model_dump() if state.mode else None,
        "switches": state.switches.model_dump() if state.switches else None,
        "plan": plan_json(state.plan),
        "requests": [r.document() for r in state.requests if r.open],
        "maintenance": sorted(state.placement.maintenance),
    }


def plan_json(plan: StoredPlan | None) -> dict[str, Any] | None:
    if plan is None or not plan.plan.moves:
        return None
    progress = plan.plan.progress
    return {
        "decision": plan.plan.decision,
        "kind": plan.plan.kind,
        "moves": len(plan.plan.moves),
        "epoch": plan.epoch,
        "instance": plan.instance,
        "written_at": plan.written_at,
        "progress": None
        if progress is None
        else {**progress.to_field(), "at": plan.plan.progress_at},
    }
