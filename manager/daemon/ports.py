"""What the daemon needs of its collaborators. ``manager.daemon.wiring`` passes the real ones;
unit tests pass fakes, so a cycle is tested without Kafka or ZooKeeper."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from manager.coordination.cordon_ledger import LedgerEntry
from manager.coordination.plan_document import PlanDocument
from manager.coordination.plan_store import StoredPlan
from manager.coordination.request_store import RequestState, StoredRequest
from manager.coordination.state import CoordinationState
from manager.executor.config import ExecutorConfig
from manager.executor.cordons import Cordon
from manager.executor.move_state import ChangeGuard, EventCallback, MoveState, RateCallback
from manager.executor.replica_sizes import Sample
from manager.model.move_progress import MoveProgress
from manager.model.moves import CatchUp, Move, TopicPartition
from manager.model.placement_config import PlacementConfig
from manager.model.snapshot import Leadership
from manager.monitor.feeds import FeedStatus
from manager.monitor.observation import Observation
from manager.throttling.ownership import BrokerKey, ThrottleRecord


class Clock(Protocol):
    def time(self) -> float:
        """Wall-clock seconds (timestamps, the hourly move budget)."""
        ...

    def monotonic(self) -> float:
        """Seconds for durations."""
        ...


class SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class Sources(Protocol):
    def start(self, on_registrations: Callable[[], None] = ...) -> Any: ...

    def stop(self) -> None: ...

    def feed_status(self) -> list[FeedStatus]: ...

    @property
    def stages(self) -> Mapping[str, float]:
        """The last observation's wall seconds by stage."""
        ...

    def observe(
        self,
        now_ms: int,
        *,
        placement: PlacementConfig,
        leadership: Leadership,
        own_moves: frozenset[TopicPartition],
        moves_last_hour: int,
        retired: frozenset[int] = frozenset(),
    ) -> Observation:
        """Raises manager.monitor.sources.AdminUnavailable when the cluster cannot be read.
        ``retired``: brokers a decommission unregistered, not brokers that died."""
        ...


class PlanWriter(Protocol):
    def write(self, plan: PlanDocument, expected_version: int | None) -> StoredPlan: ...


class RequestWriter(Protocol):
    def mark(self, request: StoredRequest, state: RequestState, note: str) -> StoredRequest: ...


class Coordinator(Protocol):
    @property
    def is_leader(self) -> bool: ...

    @property
    def epoch(self) -> int: ...

    @property
    def connected(self) -> bool: ...

    @property
    def shutdown_reason(self) -> str | None: ...

    @property
    def plans(self) -> PlanWriter: ...

    @property
    def requests(self) -> RequestWriter: ...

    @property
    def cordon_ledger(self) -> Ledger: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def watch(
        self,
        *,
        on_leadership_acquired: Callable[[int], None] | None = None,
        on_leadership_lost: Callable[[str], None] | None = None,
        on_shutdown: Callable[[str], None] | None = None,
    ) -> None: ...

    def may_act(self) -> bool: ...

    def lease_left_s(self) -> float: ...

    def verify_leadership(self) -> bool: ...

    def read_state(self) -> CoordinationState: ...


class Ledger(Protocol):
    """The cordons kmedic wrote (manager.coordination.cordon_ledger)."""

    def load(self) -> dict[int, LedgerEntry]: ...

    def save(self, owned: Mapping[int, LedgerEntry]) -> None: ...


class Cordons(Protocol):
    """Brokers' cordons as Kafka holds them (manager.executor.cordons)."""

    def read(self, broker: int) -> Cordon: ...

    def write(self, broker: int, cordoned: bool) -> None: ...


class Executor(Protocol):
    config: ExecutorConfig
    on_event: EventCallback | None
    on_rates: RateCallback | None
    before_change: ChangeGuard | None

    @property
    def cordons(self) -> Cordons: ...

    @property
    def sizes(self) -> Callable[[Mapping[int, Iterable[TopicPartition]]], Sample]:
        """The new replicas' sizes, by (partition, broker): the watchdog's sampler."""
        ...

    def submit(self, moves: Iterable[Move], *, adopted: bool = False) -> None: ...

    def active(self) -> list[MoveState]: ...

    def in_flight(self) -> list[MoveState]: ...

    def catch_up(self, catch_ups: Iterable[CatchUp]) -> None: ...

    def catching_up(self) -> bool: ...

    def step(self) -> None: ...

    def poll(self) -> bool: ...

    def forget_moves(self) -> None: ...

    def owned_throttles(self) -> ThrottleRecord: ...

    def adopt_throttles(self, record: ThrottleRecord) -> None: ...

    def release_throttles(self) -> ThrottleRecord: ...

    def throttle_rates(self) -> dict[BrokerKey, str]: ...

    def stalled_destinations(self) -> dict[int, int]: ...

    def resume_progress(self, records: Mapping[TopicPartition, MoveProgress]) -> None: ...

    def unregister_broker(self, broker_id: int) -> None: ...

    def close(self) -> None: ...
