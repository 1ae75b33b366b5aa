"""What the executor keeps and is configured by: its ``executor:`` config section, the state
of each move it runs, the one read of the cluster a step judges them by, and its callbacks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from manager.model.moves import Move, TopicPartition
from manager.model.throttles import ThrottleRecord

Status = Literal["pending", "in_flight", "completed", "failed", "cancelled"]


class ExecutorConfig(BaseModel):
    """The ``executor:`` section of the manager config, as the executor reads it."""

    model_config = ConfigDict(extra="forbid")
    max_moves_per_broker: int = Field(
        default=2, ge=1, description="concurrent moves touching one broker"
    )
    max_moves_in_flight: int = Field(
        default=10, ge=1, description="concurrent moves in the cluster"
    )
    throttle_bytes_per_s: int | None = Field(
        default=50_000_000, ge=1024, description="replication throttle; null: none"
    )
    move_timeout_s: float = Field(default=3600.0, gt=0)
    cancel_on_timeout: bool = False
    poll_interval_s: float = Field(
        default=0.5,
        gt=0,
        description="how often moves in flight are checked for completion between steps",
    )
    progress_interval_s: float = Field(default=60.0, gt=0)
    elect_preferred_leaders: bool = True
    request_timeout_s: float = Field(default=30.0, gt=0)
    admin_retry_s: float = Field(default=20.0, ge=0)


@dataclass
class MoveState:
    move: Move
    status: Status = "pending"
    original: tuple[int, ...] = ()
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    timed_out: bool = False
    ended_at: float | None = None
    last_progress: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


EventCallback = Callable[[str, MoveState, dict[str, Any]], None]
# Called with the batch about to start (maybe empty) and the throttle record to store first.
ChangeGuard = Callable[[list[Move], ThrottleRecord], bool]


@dataclass(frozen=True)
class ClusterView:
    replicas: dict[TopicPartition, tuple[int, ...]]
    leaders: dict[TopicPartition, int]
    live_brokers: frozenset[int]
    ongoing: dict[TopicPartition, dict[str, list[int]]]
