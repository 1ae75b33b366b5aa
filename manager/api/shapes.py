"""What each API route answers, as models the OpenAPI document describes (every field a
client reads named and typed); a route answers its document through them. Nested documents
kmedic already models (a mode, the switches, an audit record, the placement) are those models;
the rest are named here, open to fields added later (``extra="allow"``), so a newer manager's
answer still validates against an older client's schema."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from manager.audit.log import AuditRecord
from manager.coordination.mode_store import ModeRecord
from manager.coordination.switch_store import SwitchRecord
from manager.coordination.znodes import LeaderRecord


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class AnsweredBy(_Open):
    instance: str = Field(description="the manager instance that answered")
    leads: bool = Field(description="whether it leads (decides and acts) now")


class RequestDocument(_Open):
    id: str
    kind: Literal["drain", "fill", "demote", "decommission", "set_rf"]
    brokers: list[int]
    topic: str | None = Field(default=None, description="set_rf only")
    replication_factor: int | None = Field(default=None, description="set_rf only")
    state: Literal["pending", "running", "done", "partial", "failed", "cancelled"]
    created_ms: int
    by: str = Field(description="who stored it: a user and host, or the API caller")
    updated_ms: int
    note: str = Field(description="the leader's last word on it")


class PlanSummary(_Open):
    decision: str | None = None
    kind: str | None = None
    moves: int
    epoch: int
    instance: str
    written_at: float
    progress: dict[str, Any] | None = Field(
        description="where the plan stood when its leader last said (bytes, rate, ETA)"
    )


class ModeHeld(AnsweredBy):
    mode: str = Field(description="the mode this instance runs in now: act or observe")
    mode_source: str = Field(
        description="where it came from: flag (--mode), run_time (kmedic mode), or config"
    )


class StatusAnswer(_Open):
    cluster: str
    leader: LeaderRecord | None = Field(description="null: no manager leads")
    epoch: int = Field(description="the fencing epoch in ZooKeeper")
    mode: ModeRecord | None = Field(description="the mode set at run time; null: each config's")
    switches: SwitchRecord | None
    plan: PlanSummary | None = Field(description="the plan in flight; null: none")
    requests: list[RequestDocument] = Field(description="the open operator requests")
    maintenance: list[str] = Field(description="failure domains in maintenance")
    answered_by: ModeHeld = Field(
        description="the instance that answered, and the mode it runs in (ask the leader, "
        "named in leader, for the mode that acts)"
    )


class ReasonDocument(_Open):
    code: str
    message: str


class DecisionDocument(_Open):
    outcome: Literal["act", "noop", "refuse", "wait"]
    kind: Literal["heal", "balance"] | None
    summary: str
    reasons: list[ReasonDocument]
    actions: list[dict[str, Any]] = Field(description="reassign and elect_preferred_leader")
    bytes_to_move: int
    unhealed: list[ReasonDocument] = Field(default_factory=list)
    loads: list[dict[str, Any]] = Field(description="each broker's load before and after")


class DecisionAnswer(AnsweredBy):
    decision: DecisionDocument | None = Field(description="null: a standby decides nothing")


class ReadinessAnswer(AnsweredBy):
    readiness: dict[str, Any] | None = Field(
        description="the last sweep: when, and each loss's verdict (docs/readiness.md); "
        "null: none yet"
    )


class UnsafeTopicDocument(_Open):
    topic: str
    kind: str
    replication_factor: int
    min_insync_replicas: int | None
    sentence: str


class UnsafeAnswer(AnsweredBy):
    snapshot_taken_at_ms: int
    min_replication_factor: int
    topics: list[UnsafeTopicDocument]


class CordonDocument(_Open):
    broker: int
    by: str = Field(description="kmedic (the request it was set for), or not kmedic")


class CordonsAnswer(AnsweredBy):
    cordons: list[CordonDocument]


class AuditPage(_Open):
    records: list[AuditRecord]
    next_cursor: str | None = Field(description="pass back as cursor to read on; null: the end")


class ModeCleared(_Open):
    mode: None = None
    cleared: ModeRecord | None = Field(description="the run-time mode cleared; null: none was")
