"""Fakes of the manager's collaborators (manager.daemon.ports), for cycles without Kafka or
ZooKeeper. The audit log is the real one over an in-memory sink."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from kmedic.brokerstats import BrokerStats
from kmedic.errors import KmedicError, LeaseEnded
from kmedic.metadata import BrokerNode, PartitionInfo, Reassignment
from kmedic.partition_table import PartitionTable
from manager.audit.log import AuditLog, AuditRecord
from manager.config import ManagerConfig
from manager.coordination.cordon_ledger import LedgerEntry
from manager.coordination.mode_store import ModeRecord
from manager.coordination.plan_document import PlanDocument
from manager.coordination.plan_store import StoredPlan
from manager.coordination.request_store import RequestState, StoredRequest
from manager.coordination.state import CoordinationState
from manager.coordination.znodes import LeaderRecord
from manager.daemon.manager import Manager
from manager.executor.config import ExecutorConfig
from manager.executor.cordons import Cordon
from manager.executor.move_book import ACTIVE
from manager.executor.move_state import ChangeGuard, EventCallback, MoveState, RateCallback
from manager.executor.replica_sizes import Sample
from manager.model.move_progress import MoveProgress
from manager.model.moves import CatchUp, Move, TopicPartition
from manager.model.placement_config import PlacementConfig
from manager.model.snapshot import Leadership, Quorum
from manager.monitor.feeds import FeedStatus
from manager.monitor.load_columns import LoadColumns
from manager.monitor.observation import AgentView, Observation
from manager.monitor.sources import AdminUnavailable
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE, ThrottleRecord

NOW_S = 1_800_000_000.0
NOW_MS = int(NOW_S * 1000)
EPOCH = 3


class FakeClock:
    def __init__(self) -> None:
        self.now = NOW_S
        self.mono = 100.0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.mono += seconds


def stats(broker: int, *, ts: int, failed: bool = False, **extra: Any) -> BrokerStats:
    body: dict[str, Any] = {
        "schema_version": 1,
        "sample_id": f"s{broker}-{ts}",
        "chunk_index": 0,
        "chunk_count": 1,
        "cluster": "c",
        "broker_id": broker,
        "host": "h",
        "rack": f"/r{broker % 2 + 1}",
        "timestamp_ms": ts,
        "interval_s": 10.0,
        "rate_window_s": 10.0,
        "agent_version": "0.1.0",
        "kafka_version": "4.1",
        "failure": {"reason": "broker_unreachable", "message": "down"} if failed else None,
        "leaders": [],
        "followers": [],
        "reassigning": [],
        "log_dirs": [],
        "totals": {
            "bytes_in_per_s": 0.0,
            "bytes_out_per_s": 0.0,
            "messages_in_per_s": 0.0,
            "leader_count": 0,
            "follower_count": 0,
            "reassigning_count": 0,
            "under_replicated_count": 0,
            "log_size_bytes": 0,
        },
    }
    body.update(extra)
    return BrokerStats.model_validate(body)


def _log_dirs(cordoned: bool) -> list[dict[str, Any]]:
    one = {"total_bytes": 10**12, "free_bytes": 9 * 10**11, "replica_bytes": 0, "error": None}
    return [one | {"path": "/data/a", "cordoned": cordoned}]


class FakeSources:
    """Brokers 1-4 on racks /r1, /r2; a dead broker has been absent since an hour before NOW."""

    def __init__(self) -> None:
        self.dead: set[int] = set()
        self.unavailable: str | None = None
        self.calls: list[dict[str, Any]] = []
        self.feeds: list[FeedStatus] = []
        self.stats_age_ms = 0  # how old the agents' newest stats are
        self.stages = {"admin": 0.25, "feeds": 0.5}  # what the last observation spent, by stage
        # Replica lists the metadata shows instead of the initial ones (moves it has seen).
        self.replicas: dict[tuple[str, int], tuple[int, ...]] = {}
        # Leaders other than the preferred one (an election that did not happen).
        self.leaders: dict[tuple[str, int], int] = {}
        # Reassignments the cluster lists (someone else's, unless kmedic's own_moves name them).
        self.reassignments: dict[TopicPartition, Reassignment] = {}
        self.quorum: Quorum | None = None  # the controller quorum as read (None: not read)
        self.cordoned: set[int] = set()  # brokers whose agent reads every log dir cordoned
        self.out_of_sync: set[int] = set()  # live brokers out of every ISR (a link cut)
        # What a dead broker's agent (still speaking) reports of its process, by broker.
        self.dead_process: dict[int, dict[str, Any]] = {}

    def start(self, on_registrations: Callable[[], None] = lambda: None) -> FakeSources:
        return self

    def stop(self) -> None:
        pass

    def feed_status(self) -> list[FeedStatus]:
        return list(self.feeds)

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
        self.calls.append(
            {"own_moves": own_moves, "moves_last_hour": moves_last_hour, "retired": retired}
        )
        if self.unavailable:
            raise AdminUnavailable(self.unavailable)
        live = {
            b: BrokerNode("h", 9092, "/r1" if b % 2 else "/r2", False)
            for b in (1, 2, 3, 4)
            if b not in self.dead
        }

        def isr(replicas: tuple[int, ...]) -> tuple[int, ...]:
            return tuple(b for b in replicas if b in live and b not in self.out_of_sync)

        replicas = {0: (1, 2, 3), 1: (2, 3, 4), 2: (3, 4, 1)}
        replicas.update({p: r for (_, p), r in self.replicas.items()})
        partitions = [
            PartitionInfo("t", p, self.leaders.get(("t", p), r[0]), r, isr(r))
            for p, r in sorted(replicas.items())
        ]
        reported = now_ms - self.stats_age_ms
        agents = {
            b: AgentView(latest=s, last_healthy_ms=reported, healthy=s, read_to_ms=now_ms)
            for b in live
            for s in [stats(b, ts=reported, log_dirs=_log_dirs(b in self.cordoned))]
        }
        for b, proc in self.dead_process.items():
            said = stats(b, ts=now_ms, failed=True, process=proc)
            agents[b] = AgentView(
                latest=said, last_healthy_ms=NOW_MS - 3_600_000, healthy=None, read_to_ms=now_ms
            )
        return Observation(
            taken_at_ms=now_ms,
            cluster="c",
            live=live,
            partitions=PartitionTable.of(partitions),
            reassignments=dict(self.reassignments),
            agents=agents,
            loads=LoadColumns.of({}),
            placement=placement,
            leadership=leadership,
            own_moves=own_moves,
            moves_last_hour=moves_last_hour,
            first_absent_ms={b: NOW_MS - 3_600_000 for b in self.dead},
            known_racks={b: "/r1" if b % 2 else "/r2" for b in self.dead},
            quorum=self.quorum,
        )


class FakePlans:
    def __init__(self, coordinator: FakeCoordinator) -> None:
        self._coordinator = coordinator
        self.writes: list[tuple[dict[str, Any], int | None]] = []
        self.fail: Exception | None = None

    def write(self, plan: PlanDocument, expected_version: int | None) -> StoredPlan:
        """Kept as the JSON document ZooKeeper would hold."""
        if self.fail is not None:
            raise self.fail
        self.writes.append((plan.to_json(), expected_version))
        version = 0 if expected_version is None else expected_version + 1
        stored = StoredPlan(plan, version, self._coordinator.epoch, "m1", NOW_S)
        self._coordinator.stored = stored
        return stored


class FakeRequests:
    """Request writes, kept: ``marked`` lists (id, state) in order."""

    def __init__(self) -> None:
        self.marked: list[tuple[str, str]] = []

    def mark(self, request: StoredRequest, state: RequestState, note: str) -> StoredRequest:
        self.marked.append((request.id, state))
        return replace(request, state=state, note=note, version=request.version + 1)


class FakeCoordinator:
    def __init__(self) -> None:
        self.is_leader = True
        self.epoch = EPOCH
        self.connected = True
        self.lease_s = 10.0  # what the lease has left while leading (0: run out)
        self.shutdown_reason: str | None = None
        self.verified = True
        self.read_error: Exception | None = None
        self.stored: StoredPlan | None = None
        self.plans = FakePlans(self)
        self.requests = FakeRequests()
        self.cordon_ledger = FakeLedger()
        self.open_requests: tuple[StoredRequest, ...] = ()
        self.mode: ModeRecord | None = None  # what `kmedic mode` stored
        self.reads = 0
        self.callbacks: dict[str, Callable[..., None] | None] = {}

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def watch(self, **callbacks: Callable[..., None] | None) -> None:
        self.callbacks = callbacks

    def may_act(self) -> bool:
        return self.lease_left_s() > 0

    def lease_left_s(self) -> float:
        return self.lease_s if self.is_leader and self.connected else 0.0

    def verify_leadership(self) -> bool:
        return self.verified and self.may_act()

    def read_state(self) -> CoordinationState:
        self.reads += 1
        if self.read_error is not None:
            raise self.read_error
        leader = LeaderRecord(instance="m1" if self.is_leader else "m2", epoch=self.epoch)
        return CoordinationState(
            PlacementConfig(), self.stored, self.epoch, leader, self.open_requests, self.mode
        )

    # what ZooKeeper would tell the coordinator
    def acquire(self, epoch: int) -> None:
        self.is_leader, self.epoch = True, epoch
        callback = self.callbacks.get("on_leadership_acquired")
        assert callback is not None
        callback(epoch)

    def lose(self, reason: str) -> None:
        self.is_leader = False
        callback = self.callbacks.get("on_leadership_lost")
        assert callback is not None
        callback(reason)


class FakeLedger:
    """The cordons kmedic wrote (manager.coordination.cordon_ledger), in memory as ZooKeeper
    would keep them across leaders."""

    def __init__(self) -> None:
        self.owned: dict[int, LedgerEntry] = {}
        self.refusal: str | None = None  # every load fails with this

    def load(self) -> dict[int, LedgerEntry]:
        if self.refusal is not None:
            raise KmedicError(self.refusal)
        return dict(self.owned)

    def save(self, owned: Mapping[int, LedgerEntry]) -> None:
        self.owned = dict(owned)


class FakeCordons:
    """Kafka's cordons (``cordoned.log.dirs`` by broker); ``supported`` False: a Kafka before
    4.3, which does not know the config."""

    def __init__(self) -> None:
        self.values: dict[int, str] = {}
        self.supported = True
        self.refusal: str | None = None  # every write fails with this
        self.reads: list[int] = []
        self.writes: list[tuple[int, bool]] = []

    def read(self, broker: int) -> Cordon:
        self.reads.append(broker)
        return Cordon(self.supported, self.values.get(broker, "") if self.supported else "")

    def write(self, broker: int, cordoned: bool) -> None:
        if self.refusal is not None:
            raise KmedicError(self.refusal)
        self.writes.append((broker, cordoned))
        if cordoned:
            self.values[broker] = "*"
        else:
            self.values.pop(broker, None)


class FakeExecutor:
    def __init__(self) -> None:
        self.cordons = FakeCordons()
        self.config = ExecutorConfig(poll_interval_s=0.01)
        self.on_step: Callable[[], None] | None = None
        self.on_event: EventCallback | None = None
        self.on_rates: RateCallback | None = None
        self.before_change: ChangeGuard | None = None
        self.states: dict[TopicPartition, MoveState] = {}
        self.submitted: list[Move] = []
        self.steps = 0
        self.forgotten = 0
        self.owned = ThrottleRecord()
        self.released: list[ThrottleRecord] = []
        self.refused_batches = 0
        self.stalled: dict[int, int] = {}  # what stalled_destinations() reports
        # What the sampler answers, by (partition, broker): the bytes a new replica holds.
        self.replica_bytes: dict[tuple[TopicPartition, int], int | None] = {}
        self._complete = False
        self.fail_with: str | None = None  # after complete_all: every move fails, this why
        self.unregistered: list[int] = []
        self.unregister_refusal: str | None = None
        self.lease_ended = False  # its calls refused: this instance's lease ran out
        self.catch_ups: list[CatchUp] = []  # as the keeper last handed them over
        self.tell_starts = False  # action_started for each move a step starts, as the real one

    def catch_up(self, catch_ups: Iterable[CatchUp]) -> None:
        self.catch_ups = list(catch_ups)

    def catching_up(self) -> bool:
        return bool(self.catch_ups)

    def submit(self, moves: Iterable[Move], *, adopted: bool = False) -> None:
        for move in moves:
            self.submitted.append(move)
            self.states[move.tp] = MoveState(move, adopted=adopted)

    def active(self) -> list[MoveState]:
        return [s for s in self.states.values() if s.status in ACTIVE]

    def in_flight(self) -> list[MoveState]:
        return [s for s in self.states.values() if s.status == "in_flight"]

    def step(self) -> None:
        """Starts what is pending (a throttle rate on each move's first target, asked of
        ``before_change`` first, as the real one does); after ``complete_all``, finds every
        move completed and its throttles gone."""
        self.steps += 1
        if self.on_step is not None:
            self.on_step()
        pending = [s for s in self.active() if s.status == "pending"]
        if pending and not self._complete:
            wanted = ThrottleRecord(
                rates={(s.move.target[0], LEADER_RATE): "1000" for s in pending}
            )
            guard = self.before_change
            if guard is not None and not guard([s.move for s in pending], wanted):
                self.refused_batches += 1
                pending = []
            else:
                self.owned = self.owned.union(wanted)
        if self.catch_ups:  # a follower rate on each broker behind, asked first too
            wanted = ThrottleRecord(
                rates={(b, FOLLOWER_RATE): "1000" for c in self.catch_ups for b in c.behind}
            )
            guard = self.before_change
            if guard is None or guard([], self.owned.union(wanted)):
                self.owned = self.owned.union(wanted)
        for state in self.active():
            if self._complete and self.fail_with is not None:
                state.status, state.error = "failed", self.fail_with
                self.owned = ThrottleRecord()
                if self.on_event is not None:
                    self.on_event("action_failed", state, {"reason": self.fail_with})
            elif self._complete:
                state.status = "completed"
                self.owned = ThrottleRecord()
                if self.on_event is not None:
                    self.on_event("action_completed", state, {})
            elif state in pending:
                state.status = "in_flight"
                state.started_at = 100.0
                if self.tell_starts and self.on_event is not None:
                    self.on_event("action_started", state, {})

    def sizes(self, wanted: Mapping[int, Iterable[TopicPartition]]) -> Sample:
        return {
            (tp, b): self.replica_bytes[(tp, b)]
            for b, tps in wanted.items()
            for tp in tps
            if (tp, b) in self.replica_bytes
        }

    def stalled_destinations(self) -> dict[int, int]:
        return dict(self.stalled)

    def resume_progress(self, records: Mapping[TopicPartition, MoveProgress]) -> None:
        for tp, record in records.items():
            self.states[tp].progress = record

    def poll(self) -> bool:
        """As if a move in flight always just left the reassignment list."""
        self.step()
        return True

    def complete_all(self) -> None:
        self._complete = True

    def forget_moves(self) -> None:
        self.forgotten += 1
        self.states.clear()

    def owned_throttles(self) -> ThrottleRecord:
        return self.owned

    def adopt_throttles(self, record: ThrottleRecord) -> None:
        self.owned = self.owned.union(record)

    def release_throttles(self) -> ThrottleRecord:
        self.released.append(self.owned)
        self.owned = ThrottleRecord()
        return self.owned

    def throttle_rates(self) -> dict[tuple[int, str], str]:
        return dict(self.owned.rates)

    def unregister_broker(self, broker_id: int) -> None:
        if self.lease_ended:
            raise LeaseEnded(
                f"cannot unregister broker {broker_id}: this instance may no longer act"
            )
        if self.unregister_refusal is not None:
            raise KmedicError(self.unregister_refusal)
        self.unregistered.append(broker_id)

    def close(self) -> None:
        pass


class MemorySink:
    name = "primary"

    def __init__(self) -> None:
        self.records: list[AuditRecord] = []
        self.sends: list[int] = []  # how many records each send carried

    def send(self, records: list[AuditRecord], timeout_s: float) -> int:
        self.records.extend(records)
        self.sends.append(len(records))
        return len(records)

    def close(self) -> None:
        pass


class Rig:
    """A manager with fakes around it, and the fakes within reach."""

    def __init__(self, tmp: Path, **policy: Any) -> None:
        self.cfg = ManagerConfig.model_validate(
            {
                "cluster": "c",
                "bootstrap": "unused:9092",
                "zookeeper": {"zk_connect": "unused:2181"},
                "mode": "act",
                "policy": {"min_valid_load_fraction": 0.0, **policy},
                "audit": {"spool_dir": str(tmp / "spool")},
            }
        )
        self.clock = FakeClock()
        self.sources = FakeSources()
        self.coordinator = FakeCoordinator()
        self.executor = FakeExecutor()
        self.sink = MemorySink()
        self.manager = Manager(
            self.cfg,
            instance="m1",
            sources=self.sources,
            coordinator=self.coordinator,
            executor=self.executor,
            audit=AuditLog(self.sink, tmp / "spool"),
            clock=self.clock,
        )

    def summaries(self, kind: str = "decision") -> list[str]:
        return [r.summary for r in self.sink.records if r.kind == kind]
