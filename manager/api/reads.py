"""What the API answers to readers: the cluster's state as ZooKeeper holds it (the same from
any manager), and what this instance decided and found."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from manager.analyzer.topic_safety import unsafe_topics
from manager.api.access import caller
from manager.api.problems import Problem
from manager.api.shapes import (
    CordonsAnswer,
    DecisionAnswer,
    ReadinessAnswer,
    RequestDocument,
    StatusAnswer,
    UnsafeAnswer,
)
from manager.api.view import ManagerView
from manager.coordination.mode_store import ModeRecord, read_mode
from manager.coordination.placement_store import ZkConfigStore
from manager.coordination.request_store import read_requests
from manager.coordination.state import read_state
from manager.coordination.state_view import state_document
from manager.coordination.switch_store import SwitchRecord, read_switches
from manager.coordination.znodes import manager_path
from manager.model.placement_config import PlacementConfig


def router(view: ManagerView) -> APIRouter:
    api = APIRouter(prefix="/api/v1", dependencies=[Depends(caller)], tags=["read"])
    base = manager_path(view.zk_root, view.cluster)

    def this_instance() -> dict[str, Any]:
        return {"instance": view.instance, "leads": view.leads()}

    def effective_mode() -> dict[str, Any]:
        """The mode this instance runs in and where it came from: the stored ``mode`` is
        null whenever each config decides, which said nothing of what the leader does."""
        mode, source = view.mode()
        return {"mode": mode, "mode_source": source}

    @api.get(
        "/status",
        response_model=StatusAnswer,
        summary="who leads, the mode, the switches, the plan in flight",
    )
    def status() -> dict[str, Any]:
        """Read from ZooKeeper in one go (as `kmedic status`): who leads and with which epoch,
        the mode, the goal switches, the plan in flight with where its leader last said it
        stood (its ETA included), the open requests and the domains in maintenance."""
        with view.zookeeper() as client:
            state = read_state(client, view.cluster, view.zk_root)
        answered = {**this_instance(), **effective_mode()}
        return {**state_document(view.cluster, state), "answered_by": answered}

    @api.get("/decision", response_model=DecisionAnswer, summary="this instance's last decision")
    def decision() -> dict[str, Any]:
        """The leader's last decision with its reasons and moves; a standby decides nothing
        (its ``decision`` is null: ask the leader, named in /api/v1/status)."""
        made = view.decision()
        return {**this_instance(), "decision": made.to_dict() if made is not None else None}

    @api.get(
        "/readiness", response_model=ReadinessAnswer, summary="the last failure-readiness sweep"
    )
    def readiness() -> dict[str, Any]:
        shown = view.readiness()
        return {**this_instance(), "readiness": dict(shown) if shown is not None else None}

    @api.get(
        "/topics/unsafe",
        response_model=UnsafeAnswer,
        summary="topics no heal can save, as of the last snapshot",
    )
    def unsafe() -> dict[str, Any]:
        snap = view.snapshot()
        if snap is None:
            raise Problem(503, "this instance has not read the cluster yet")
        policy = snap.policy
        found = unsafe_topics(snap, policy, view.own_topics)
        return {
            **this_instance(),
            "snapshot_taken_at_ms": snap.taken_at,
            "min_replication_factor": policy.min_replication_factor,
            "topics": [
                {
                    "topic": u.topic,
                    "kind": u.kind,
                    "replication_factor": u.replication_factor,
                    "min_insync_replicas": u.min_insync_replicas,
                    "sentence": u.sentence(policy.min_replication_factor),
                }
                for u in found
            ],
        }

    @api.get(
        "/cordons",
        response_model=CordonsAnswer,
        summary="every cordoned broker and who set its cordon",
    )
    def cordons() -> dict[str, Any]:
        """Brokers that take no new replica (Kafka's cordon, KIP-1066, as the agents read it,
        or a drain holding it), each with who set it: kmedic (the request it was set for) or
        not kmedic. kmedic removes only its own. As this instance last saw them (a standby
        reads no ledger: ask the leader, named in /api/v1/status)."""
        return {**this_instance(), "cordons": view.cordons()}

    @api.get(
        "/requests",
        response_model=list[RequestDocument],
        summary="every operator request, oldest first",
    )
    def requests() -> list[dict[str, Any]]:
        with view.zookeeper() as client:
            return [r.document() for r in read_requests(client, base)]

    @api.get(
        "/mode",
        response_model=ModeRecord | None,
        summary="the mode set at run time (null: each config's)",
    )
    def mode() -> dict[str, Any] | None:
        with view.zookeeper() as client:
            record = read_mode(client, base)
        return record.model_dump() if record else None

    @api.get(
        "/switches",
        response_model=SwitchRecord | None,
        summary="the goal switches set at run time (null: each config's)",
    )
    def switches() -> dict[str, Any] | None:
        with view.zookeeper() as client:
            record = read_switches(client, base)
        return record.model_dump() if record else None

    @api.get("/placement", response_model=PlacementConfig, summary="the placement configuration")
    def placement() -> dict[str, Any]:
        """Failure domains, broker, isolation and anti-affinity groups, and the domains in
        maintenance, as the manager reads them from ZooKeeper."""
        with view.zookeeper() as client:
            found = ZkConfigStore(client, view.cluster, view.zk_root).load()
        return found.model_dump(mode="json")

    return api
