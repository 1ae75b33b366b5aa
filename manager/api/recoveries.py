"""The last resort over HTTP (``kmedic recover``'s twin): the ways out of each offline
partition with what each would lose (readers), and an unclean election a writer typed back
with the loss accepted. Answered from the snapshot of this instance's last cycle; acting only
on the leading instance, whose snapshot is the cluster's newest (manager/executor/last_resort.py
takes the step, and audits it before and after)."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from kmedic.errors import KmedicError, Refused
from manager.analyzer.recovery import partition_ways
from manager.api.access import Writer, caller
from manager.api.problems import Problem
from manager.api.view import ManagerView
from manager.executor.last_resort import LastResort, take_last_resort
from manager.model.snapshot import Snapshot


class Recovery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    partition: str = Field(description="the offline partition, TOPIC:N", pattern=r".+:\d+$")
    way: str = Field(description="the way out, as the ways name it: elect:B")
    accept_loss: Annotated[int, Field(ge=0)] | Literal["all"] = Field(
        description="the most records accepted lost (the way's bound, typed back); all: any"
    )


def router(view: ManagerView) -> APIRouter:
    api = APIRouter(prefix="/api/v1", tags=["recover"])

    def snapshot() -> Snapshot:
        snap = view.snapshot()
        if snap is None:
            raise Problem(409, "this instance has no snapshot yet: ask the leader (/api/v1/status)")
        return snap

    @api.get(
        "/recoveries",
        dependencies=[Depends(caller)],
        summary="each offline partition's ways out, each with the most it loses",
    )
    def ways() -> dict[str, Any]:
        """As `kmedic recover` (a dry run) prints them, ranked: wait, elect, recreate."""
        snap = snapshot()
        now_ms = int(time.time() * 1000)
        return {
            f"{o.topic}:{o.partition}": [w.to_dict() for w in partition_ways(snap, o, now_ms)]
            for o in snap.offline_partitions
        }

    @api.post(
        "/recoveries",
        summary="take an unclean election typed back with the loss accepted",
    )
    async def recover(body: Recovery, who: Writer) -> dict[str, Any]:
        """Refused (409) when this instance does not lead, when the partition is not offline,
        or when the way's bound grew past ``accept_loss`` since; else audited, taken, and its
        outcome (the new leader's log end beside the estimate) audited and answered."""
        if not view.leads():
            raise Problem(409, "refused: only the leading instance acts (/api/v1/status)")
        snap = snapshot()
        accepted = None if body.accept_loss == "all" else body.accept_loss

        def audit(summary: str, details: dict[str, Any]) -> None:
            view.audit_write(who.by, who.user, summary, partitions=[body.partition], **details)

        def take() -> dict[str, Any]:
            taken = take_last_resort(
                snap,
                body.partition,
                body.way,
                accepted,
                LastResort(
                    view.kafka,
                    client_id=f"kmedic-recover-{view.instance}",
                    stats_topic=view.stats_topic,
                ),
                audit,
                who.by,
                int(time.time() * 1000),
            )
            return taken.to_dict()

        try:
            return await run_in_threadpool(take)
        except Refused as exc:
            raise Problem(409, f"refused: {exc}") from exc
        except KmedicError as exc:
            raise Problem(502, str(exc)) from exc

    return api
