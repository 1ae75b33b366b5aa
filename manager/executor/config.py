"""The ``executor:`` section of the manager config, as the executor reads it (docs/executor.md)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from manager.throttling.adaptive import Headroom

FETCH_BYTES = 1 << 20  # replica.fetch.max.bytes, Kafka's default


class ExecutorConfig(BaseModel):
    """The ``executor:`` section of the manager config, as the executor reads it."""

    model_config = ConfigDict(extra="forbid")
    max_moves_per_broker: int = Field(
        default=5,
        ge=1,
        description="concurrent moves touching one broker (each replica of a moving "
        "partition counts; the throttle, not this count, bounds the bytes per second)",
    )
    max_moves_in_flight: int = Field(
        default=10, ge=1, description="concurrent moves in the cluster that change replicas"
    )
    max_leader_moves_in_flight: int = Field(
        default=1000,
        ge=1,
        description="concurrent moves in the cluster that only reorder replicas (leadership "
        "moves: nothing copied; outside the two limits above)",
    )
    throttle_bytes_per_s: Annotated[int, Field(ge=1024)] | Literal["adaptive"] | None = Field(
        default=50_000_000,
        description="replication throttle: a fixed rate on every broker taking part, "
        "adaptive (each broker's headroom, see adaptive:), or null (none)",
    )
    start_order: Literal["as_planned", "least_written_first"] = Field(
        default="as_planned",
        description="the order pending moves start in: the plan's, or (with the adaptive "
        "throttle) partitions under min.insync.replicas first, then the least written",
    )
    adaptive: Headroom = Field(
        default=Headroom(), description="the adaptive throttle's rule (docs/executor.md)"
    )
    stall_s: float = Field(
        default=120.0,
        gt=0,
        description="a move whose adding replicas gain no byte for this long is reported; "
        "for twice this long, cancelled and replanned without its destination",
    )
    progress_sample_s: float = Field(
        default=5.0, gt=0, description="how often the adding replicas' sizes are sampled"
    )
    sample_timeout_s: float = Field(
        default=5.0, gt=0, description="how long one broker may take to report its sizes"
    )
    stall_exclude_s: float = Field(
        default=1800.0,
        ge=0,
        description="how long a destination whose move was cancelled for a stall receives "
        "no new replicas",
    )
    poll_interval_s: float = Field(
        default=0.5,
        gt=0,
        description="how often moves in flight are checked for completion between steps",
    )
    progress_interval_s: float = Field(default=60.0, gt=0)
    elect_preferred_leaders: bool = True
    request_timeout_s: float = Field(default=30.0, gt=0)
    admin_retry_s: float = Field(default=20.0, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _no_wall_clock_timeout(cls, raw: Any) -> Any:
        gone = sorted(k for k in ("move_timeout_s", "cancel_on_timeout") if k in dict(raw or {}))
        if gone:
            raise ValueError(
                f"{' and '.join(gone)}: no longer read; the progress watchdog replaced the "
                "wall-clock timeout: a move is reported after stall_s without progress and "
                "cancelled after twice that (docs/executor.md)"
            )
        return raw

    @field_validator("throttle_bytes_per_s", mode="before")
    @classmethod
    def _one_rate_adaptive_or_none(cls, raw: Any) -> Any:
        if isinstance(raw, str) and raw != "adaptive" and not raw.isdigit():
            raise ValueError(f"a rate in bytes/s (1024 or more), adaptive, or null; not {raw!r}")
        return raw

    @model_validator(mode="after")
    def _stall_outlasts_a_throttled_fetch(self) -> ExecutorConfig:
        # A throttled follower copies in whole fetches (replica.fetch.max.bytes, 1 MiB by
        # default) and then waits its quota out: a stall_s shorter than two such waits would
        # cancel a move that is merely throttled.
        rate = self.slowest_rate
        if rate is not None and self.stall_s < 2 * FETCH_BYTES / rate:
            raise ValueError(
                f"stall_s {self.stall_s:g} is too short for a throttle of {rate} bytes/s: a "
                f"throttled follower may wait {_seconds(FETCH_BYTES / rate)} s between fetches "
                f"(1 MiB each); use stall_s >= {_seconds(2 * FETCH_BYTES / rate, up=True)}"
            )
        return self

    @property
    def slowest_rate(self) -> int | None:
        """The slowest rate a move may be throttled to (None: not throttled)."""
        if self.throttle_bytes_per_s == "adaptive":
            return self.adaptive.floor_bytes_per_s
        return self.throttle_bytes_per_s


def _seconds(s: float, *, up: bool = False) -> str:
    """Seconds as a bound is read: three significant digits, rounded up for a minimum (a
    bound of 0.0419 s shown as 0.042, never as 0, which the check would refuse again)."""
    if not up or s <= 0:
        return f"{s:.3g}"
    scale = 10.0 ** (2 - math.floor(math.log10(s)))
    return f"{math.ceil(s * scale) / scale:g}"
