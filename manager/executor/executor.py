"""The executor: partition moves through the Kafka Admin API, in bounded batches, throttled.

Each ``step()`` reads the cluster once (metadata and ongoing reassignments), then:
1. tracks the moves in flight: completed (replicas equal the target) → preferred leader
   election; a destination broker no longer alive → the move is cancelled and reported failed
   (the planner replans it); the progress watchdog (manager.executor.watchdog) reports a move
   whose adding replicas stopped growing and cancels it after twice ``stall_s``;
2. starts the next pending moves that fit the limits (per broker, per cluster, the write
   budget if asked), setting the replication throttles before issuing the reassignment;
3. sets the throttles the remaining moves need and removes every other one it set.
Catch-ups (``catch_up``: brokers back from a restart copying into their replicas outside the
ISR) are throttled as moves' copies; the daemon steps the executor while there are any.

Before every batch, and before any throttle change that makes kmedic own more, ``before_change``
is called with the batch and the throttle record to store: the daemon makes it a fenced write
of the in-flight plan, so only a verified leader starts moves and a successor knows which
throttles are kmedic's. When it returns False nothing is started or changed.

Events (``action_started``, ``action_progress``, ``action_completed``, ``action_failed``,
``alert_raised``) go to ``on_event`` so the daemon can audit and count them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster
from kmedic.logging import get_logger
from manager.executor.admin_calls import AdminCalls, read_view
from manager.executor.batches import select_batch
from manager.executor.config import ExecutorConfig
from manager.executor.cordons import BrokerCordons
from manager.executor.elections import settle_leadership
from manager.executor.in_flight import track
from manager.executor.move_book import MoveBook
from manager.executor.move_state import (
    ChangeGuard,
    ClusterView,
    EventCallback,
    MoveState,
    RateCallback,
    Status,
)
from manager.executor.pending import judge, may_start, note_settling
from manager.executor.replica_sizes import ReplicaSizes
from manager.executor.throttle_step import Throttling
from manager.executor.watchdog import Watchdog
from manager.model.move_progress import MoveProgress
from manager.model.moves import CatchUp, Move, TopicPartition
from manager.throttling.ownership import BrokerKey, ThrottleRecord
from manager.throttling.rates import TrafficFeed

log = get_logger(__name__)

# How long broker metadata may lag the controller before a move is judged by it.
METADATA_SETTLE_S = 15.0


class Executor:
    def __init__(
        self,
        bootstrap_servers: Cluster,
        config: ExecutorConfig | None = None,
        *,
        on_event: EventCallback | None = None,
        traffic: TrafficFeed | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
        calls: AdminCalls | None = None,
    ) -> None:
        self.config = config or ExecutorConfig()
        self.on_event = on_event
        self.on_rates: RateCallback | None = None  # adaptive rates changed, with their figures
        self.before_change: ChangeGuard | None = None
        self._clock, cfg = clock, self.config
        self._retrying = calls or AdminCalls(
            bootstrap_servers, cfg.request_timeout_s, cfg.admin_retry_s
        )
        self.book = MoveBook()
        self.throttling = Throttling(self.config, self._retrying, self._retrying.once)
        self.throttling.rates.feed = traffic
        self.cordons = BrokerCordons(self._retrying)
        self._live: frozenset[int] = frozenset()
        self._replicas: dict[TopicPartition, tuple[int, ...]] = {}  # as the last step read them
        self._leaders: dict[TopicPartition, int] = {}
        self._isr: dict[TopicPartition, tuple[int, ...]] = {}
        self.sizes = ReplicaSizes(bootstrap_servers, cfg.sample_timeout_s)
        self.watchdog = Watchdog(self.sizes, cfg, clock, wall_ms)

    # -- public ----------------------------------------------------------------------------

    def submit(self, moves: Iterable[Move], *, adopted: bool = False) -> None:
        """``adopted``: the moves of a predecessor's stored plan (it told their starts)."""
        self.book.submit(moves, adopted=adopted)

    @property
    def states(self) -> dict[TopicPartition, MoveState]:
        """By partition, the latest move of each (the book's)."""
        return self.book.states

    def active(self) -> list[MoveState]:
        return self.book.active()

    def in_flight(self) -> list[MoveState]:
        return self.book.in_flight()

    def done(self) -> bool:
        return not self.active()

    def catch_up(self, catch_ups: Iterable[CatchUp]) -> None:
        """The catch-ups now (replacing the last ones), throttled from the next step."""
        self.throttling.catch_ups = {c.tp: c for c in catch_ups}

    def catching_up(self) -> bool:
        return bool(self.throttling.catch_ups)

    def step(self) -> None:
        view = self.read_cluster()
        # A destination the watchdog gave up on may hang: its rate waits as a dead broker's.
        self._live = view.live_brokers - set(self.watchdog.excluded())
        self._replicas, self._leaders, self._isr = view.replicas, view.leaders, view.isr
        self._track(view)
        self._start_next(view)
        self._watch(view.ongoing)  # after the starts: a move's first sample is its baseline
        self._apply_throttles()

    def poll(self) -> bool:
        """A cheap look between steps: one reassignment listing. Steps (and returns True) only
        when a move in flight has left Kafka's list (completed or cancelled), so the next move
        can start at once, not at the next step. The watchdog samples on the way, the adaptive
        throttle's rates are recomputed when due; True too when the watchdog told of a move."""
        flying = {s.move.tp for s in self.in_flight()}
        if not flying:
            return False
        ongoing = self._retrying(
            lambda kp: kp.list_partition_reassignments(), "list partition reassignments"
        )
        listed = {(tp.topic, tp.partition): dict(info) for tp, info in ongoing.items()}
        if flying <= set(listed):
            verdict = self._watch(listed)
            if self.throttling.rates.due():
                self._apply_throttles()
            return verdict
        self.step()
        return True

    def read_cluster(self, topics: Iterable[str] = ()) -> ClusterView:
        """The cluster as its moves see it (their topics, the catch-ups', and ``topics``)."""
        ours = {s.move.topic for s in self.active()} | self.throttling.catch_up_topics()
        return read_view(self._retrying, ours.union(topics))

    def owned_throttles(self) -> ThrottleRecord:
        """The throttle settings this executor set, or adopted, and has not removed."""
        return self.throttling.owned()

    def adopt_throttles(self, record: ThrottleRecord) -> None:
        """Take over throttles a predecessor recorded as kmedic's; they are removed once no
        move needs them (``release_throttles``, or a step without them)."""
        self.throttling.configs.adopt(record)

    def release_throttles(self) -> ThrottleRecord:
        """Remove every throttle kmedic owns (no move runs); returns what is left: rates on
        brokers that are down or excluded for a stall, removed once they are back."""
        live = self.read_cluster().live_brokers - set(self.watchdog.excluded())
        return self.throttling.configs.release(live)

    def forget_moves(self) -> None:
        """Drop every move this instance tracks, and what it knows of the throttles it set
        (leadership was lost: Kafka keeps running the reassignments already issued, and the
        next leader adopts them, with their throttles, from the in-flight plan)."""
        self.book.clear()
        self.throttling.forget()
        self._live = frozenset()

    def unregister_broker(self, broker_id: int) -> None:
        self._retrying.unregister_broker(broker_id)  # a decommissioned broker, once stopped

    def close(self) -> None:
        self._retrying.close()
        self.sizes.close()

    # -- the progress watchdog -------------------------------------------------------------

    def _watch(self, ongoing: dict[TopicPartition, dict[str, list[int]]]) -> bool:
        """Report moves that stopped copying, cancel those stopped for twice ``stall_s`` (the
        brokers to blame excluded: the replan goes elsewhere); True if the verdict changed."""
        changes = self.watchdog.watch(self.in_flight(), ongoing, self._leaders)
        for change in changes:
            state, figures = change.state, change.figures
            if change.verdict == "moving":
                state.stalled = False
                self._emit("action_progress", state, {"resumed": True, **figures})
                continue
            blamed, stall = list(change.blamed), change.stall
            if not state.stalled:
                state.stalled = True
                self._emit("alert_raised", state, {"reason": stall, "stalled": blamed, **figures})
            if change.verdict == "cancel":
                self._retrying.reassign({state.move.tp: None}, f"cancel {state.move.key}")
                self.watchdog.exclude(blamed)
                excluded = f"{self.config.stall_exclude_s:.0f} s"
                state.details["excluded_destinations"] = blamed
                self._finish(
                    state, "cancelled", f"{stall}; cancelled, brokers {blamed} excluded {excluded}"
                )
        return bool(changes)

    # -- tracking --------------------------------------------------------------------------

    def _track(self, view: ClusterView) -> None:
        now, cfg = self._clock(), self.config
        for state in self.in_flight():
            said = track(state.move, view)
            if said.fate == "fail":
                self._retrying.reassign({state.move.tp: None}, f"cancel {state.move.key}")
                self._finish(state, "failed", said.reason)
            elif said.fate == "run" and now - state.last_progress >= cfg.progress_interval_s:
                state.last_progress = now
                self._emit("action_progress", state, {"ongoing": view.ongoing[state.move.tp]})
            elif said.fate == "in_place":
                self._complete(state, view)
            elif said.fate == "ended":
                state.ended_at = now if state.ended_at is None else state.ended_at
                if now - state.ended_at > METADATA_SETTLE_S:
                    self._finish(state, "failed", said.reason)

    def _complete(self, state: MoveState, view: ClusterView, told: bool = True) -> None:
        """Replicas in place: done once the preferred leader leads (``executor.elections``).
        A move found in place before it started - a reorder applied by an earlier plan, a
        plan made on a view older than this read - is its election alone: told started when
        it is asked (or fails), unless its start was ``told`` already. Its preferred leader
        leading, nothing is left to do and nothing is told: a completion without a start
        would tell the end of the move that put the replicas there again (the 60-minute soak
        found 11 ends told twice so)."""
        ask = self._retrying.elect_preferred if self.config.elect_preferred_leaders else None
        ended = settle_leadership(state, view, self._clock(), ask, METADATA_SETTLE_S)
        if not told:
            if ended == ("completed", None) and state.election is None:
                state.status, state.finished_at = "completed", self._clock()
                log.info("move_in_place", partition=state.move.key, target=state.move.target)
                return
            self._emit("action_started", state, {"in_place": "only its preferred leader election"})
        if ended is not None:
            self._finish(state, *ended)

    # -- starting --------------------------------------------------------------------------

    def _start_next(self, view: ClusterView) -> None:
        pending = self.book.pending()
        excluded, now = self.watchdog.excluded(), self._clock()
        for state in pending:
            said = judge(state.move, state.unanswered is not None, view, excluded)
            note_settling(state, said, now)
            if state.move.tp not in view.ongoing and state.move.tp in view.replicas:
                state.original = view.replicas[state.move.tp]  # what the audit shows as "before"
            if said.cancel:
                self._retrying.reassign({state.move.tp: None}, f"cancel {state.move.key}")
            if said.fate == "fail":
                # Nothing of it ran: its record is its own, no end of a move told before.
                unstarted = {} if state.adopted else {"not_started": True}
                self._finish(state, "failed", said.reason, unstarted)
            elif said.fate == "adopt":
                self._adopt(state, view.ongoing[state.move.tp])
            elif said.fate == "in_place":
                told = state.adopted  # its start told by the predecessor
                if state.unanswered is not None:
                    self._confirm_unanswered(state, "its replicas are in place")
                    told = True
                self._complete(state, view, told)
        replicas_now = {**view.replicas, **{s.move.tp: s.original for s in self.in_flight()}}
        waiting = [s.move for s in pending if may_start(s, now, METADATA_SETTLE_S)]
        running = [s.move for s in self.in_flight()]
        waiting, budget, into = self.throttling.admission(waiting, running, replicas_now, view.isr)
        batch = select_batch(
            waiting,
            replicas_now,
            running,
            max_per_broker=self.config.max_moves_per_broker,
            max_per_cluster=self.config.max_moves_in_flight,
            max_reorders=self.config.max_leader_moves_in_flight,
            dead=view.down(b for reps in replicas_now.values() for b in reps),
            budget=budget,
            into=into,
        )
        if not batch:
            return
        # Throttles before the reassignment, so that no byte moves unthrottled.
        if not self._apply_throttles(batch, {m.tp: view.replicas[m.tp] for m in batch}):
            return
        for move in batch:
            state = self.states[move.tp]
            state.original = view.replicas[move.tp]
            state.status = "in_flight"
            state.started_at = state.last_progress = self._clock()
        try:
            errors = self._retrying.reassign(
                {m.tp: list(m.target) for m in batch}, f"reassign {len(batch)} partitions"
            )
        except KmedicError as exc:
            # Taken or not (``executor.pending`` tells at the next read): never judged running,
            # or the watchdog would blame its destinations for bytes nobody asked them for.
            for move in batch:
                state = self.states[move.tp]
                state.status, state.started_at, state.unanswered = "pending", None, str(exc)
            raise
        for move in batch:
            state = self.states[move.tp]
            err = errors.get(move.tp)
            if err is not None:
                self._finish(state, "failed", f"Kafka refused the reassignment: {err}")
            else:
                self._confirm_unanswered(state, "asked again")

    def _confirm_unanswered(self, state: MoveState, how: str) -> None:
        """A move started (its request answered), or shown taken by Kafka after its request
        went unanswered: ``action_started``, with that story."""
        story = (
            {} if state.unanswered is None else {"unanswered": state.unanswered, "confirmed": how}
        )
        self._emit("action_started", state, story)
        state.unanswered = None

    def _adopt(self, state: MoveState, ongoing: dict[str, list[int]]) -> None:
        """Kafka runs this move's reassignment: tracked from here on."""
        state.status = "in_flight"
        state.original = tuple(
            b for b in ongoing.get("replicas", []) if b not in ongoing.get("adding_replicas", [])
        )
        state.started_at = state.last_progress = self._clock()
        if state.unanswered is not None:
            self._confirm_unanswered(state, "Kafka lists its reassignment")
            return
        self._emit("action_progress", state, {"adopted": True, "ongoing": ongoing})

    # -- throttles -------------------------------------------------------------------------

    def _apply_throttles(
        self,
        batch: Sequence[Move] = (),
        starts: Mapping[TopicPartition, tuple[int, ...]] | None = None,
    ) -> bool:
        """Set the throttles the moves in flight and ``batch`` (from ``starts``) need. Leadership
        proven and the throttles recorded first: ``before_change`` is asked for a batch, and
        for a change that makes kmedic own more (one that only removes needs no permission)."""
        flight = self.in_flight()
        originals = {**{st.move.tp: st.original for st in flight}, **(starts or {})}
        moves = [st.move for st in flight] + list(batch)
        prepared = self.throttling.prepare(moves, originals, self._isr, self._live, self._replicas)
        if self.before_change is not None:
            owned = self.throttling.owned()
            record = owned.union(prepared.change.owned)
            if (batch or record != owned) and not self.before_change(list(batch), record):
                return False
        changed = self.throttling.commit(prepared)
        if changed and self.on_rates is not None:
            self.on_rates(changed)
        return True

    def resume_progress(self, records: Mapping[TopicPartition, MoveProgress]) -> None:
        """A predecessor's watchdog records for moves this instance adopts: their clocks go on."""
        for tp, record in records.items():
            if (state := self.states.get(tp)) is not None and state.status == "pending":
                state.progress = record

    def stalled_destinations(self) -> dict[int, int]:
        """Brokers a move was cancelled on for a stall, within ``stall_exclude_s``, and when."""
        return self.watchdog.excluded()

    def throttle_rates(self) -> dict[BrokerKey, str]:
        """The rates this executor set, by broker and config (for the gauges)."""
        return self.throttling.configs.wanted_rates()

    # -- helpers ---------------------------------------------------------------------------

    def _finish(
        self,
        state: MoveState,
        status: Status,
        error: str | None,
        details: dict[str, Any] | None = None,
    ) -> None:
        state.status = status
        state.error = error
        state.finished_at = self._clock()
        kind = "action_completed" if status == "completed" else "action_failed"
        self._emit(kind, state, ({"reason": error} if error else {}) | (details or {}))

    def _emit(self, kind: str, state: MoveState, details: dict[str, Any]) -> None:
        log.info(
            "move_" + kind.removeprefix("action_"),
            partition=state.move.key,
            target=list(state.move.target),
            original=list(state.original),
            **details,
        )
        if self.on_event is not None:
            self.on_event(kind, state, details)
