"""What the API does for writers: operator requests, the mode and the goal switches, stored
where the CLI stores them (any manager answers: leader or standby) and audited by the
instance that answered, with the caller's name and address."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any, Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from kmedic.errors import KmedicError, Unreachable
from manager.analyzer.request_check import Asked, ClusterFacts, never_met
from manager.api.access import Caller, Writer
from manager.api.problems import Problem
from manager.api.shapes import ModeCleared, RequestDocument
from manager.api.view import ManagerView
from manager.coordination.mode_store import ModeRecord, clear_mode, set_mode
from manager.coordination.request_store import cancel, read_requests, submit
from manager.coordination.switch_store import SwitchRecord, set_switches
from manager.coordination.znodes import CoordinationError, manager_path
from manager.model.snapshot import RequestKind


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class NewRequest(_Body):
    kind: RequestKind
    brokers: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list, description="the brokers (every kind but set_rf)"
    )
    topic: str | None = Field(default=None, description="set_rf: the topic")
    replication_factor: int | None = Field(
        default=None, ge=1, description="set_rf: the replication factor wanted"
    )


class ModeChange(_Body):
    mode: Literal["act", "observe"]
    why: str = Field(default="", description="a note for the audit log")


class SwitchChange(_Body):
    goals: dict[str, bool | None] = Field(
        description="goal name -> true (on), false (off) or null (as each config says)"
    )
    why: str = Field(default="", description="a note for the audit log")


@contextmanager
def unprocessable() -> Iterator[None]:
    """A store's refusal of the value itself (a request without brokers, a goal that does not
    exist) is the caller's to fix: 422. ZooKeeper not answering stays what it is."""
    try:
        yield
    except (CoordinationError, Unreachable):
        raise
    except KmedicError as exc:
        raise Problem(422, str(exc)) from exc


def router(view: ManagerView) -> APIRouter:
    api = APIRouter(prefix="/api/v1", tags=["write"])
    base = manager_path(view.zk_root, view.cluster)

    def audited(who: Caller, summary: str, **details: Any) -> None:
        view.audit_write(who.by, who.user, summary, **details)

    @api.post(
        "/requests",
        status_code=201,
        response_model=RequestDocument,
        summary="store an operator request",
    )
    def create_request(body: NewRequest, who: Writer) -> dict[str, Any]:
        """A drain, fill, demote, decommission or set_rf request, pending until the leading
        manager plans it through its gates (as `kmedic drain` ... store it). One that can never
        be met on the cluster as this instance last read it is refused with why (409), never
        queued (manager.analyzer.request_check)."""
        snap = view.snapshot()
        if snap is not None:
            asked = Asked(body.kind, tuple(body.brokers), body.topic, body.replication_factor)
            why = never_met(asked, ClusterFacts.of(snap))
            if why is not None:
                raise Problem(409, f"refused: {why}")
        with view.zookeeper() as client, unprocessable():
            stored = submit(
                client,
                base,
                body.kind,
                body.brokers,
                who.by,
                topic=body.topic,
                replication_factor=body.replication_factor,
            )
        audited(who, f"stored {stored.sentence()}", request=stored.document())
        return stored.document()

    @api.delete(
        "/requests/{request_id}",
        response_model=RequestDocument,
        summary="cancel a request; moves in flight finish",
    )
    def cancel_request(request_id: str, who: Writer) -> dict[str, Any]:
        with view.zookeeper() as client:
            if request_id not in {r.id for r in read_requests(client, base)}:
                raise Problem(404, f"no request {request_id}")
            stored = cancel(client, base, request_id)
        audited(who, f"cancelled: {stored.sentence()}", request=stored.document())
        return stored.document()

    @api.put(
        "/mode",
        response_model=ModeRecord,
        summary="switch every manager's mode: act, or observe (write nothing)",
    )
    def put_mode(body: ModeChange, who: Writer) -> JSONResponse:
        with view.zookeeper() as client:
            record = set_mode(client, base, body.mode, who.by, body.why)
        audited(who, f"mode set to {record.mode}", mode=record.model_dump())
        return JSONResponse(record.model_dump())

    @api.delete(
        "/mode",
        response_model=ModeCleared,
        summary="clear the mode set at run time: each manager runs in its config's mode",
    )
    def delete_mode(who: Writer) -> JSONResponse:
        with view.zookeeper() as client:
            cleared = clear_mode(client, base)
        was = cleared.model_dump() if cleared else None
        audited(who, "mode set at run time cleared: each config decides", mode=None, was=was)
        return JSONResponse({"mode": None, "cleared": was})

    @api.put(
        "/switches",
        response_model=SwitchRecord,
        summary="switch goals on, off, or back to each config",
    )
    def put_switches(body: SwitchChange, who: Writer) -> JSONResponse:
        with view.zookeeper() as client, unprocessable():
            record = set_switches(client, base, body.goals, who.by, body.why)
        audited(who, f"goal switches set: {record.sentence()}", switches=record.model_dump())
        return JSONResponse(record.model_dump())

    return api
