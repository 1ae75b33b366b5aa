"""The executor's throttles as one step sees them, from the throttling package
(manager.throttling): the throttled replicas the moves need (``targets``), the rate of each
broker taking part (``rates``), and the configs that makes (``configs``): prepared, then
sent; the rates that changed come back with the figures behind them, for the audit log.

A catch-up (``manager.model.moves.CatchUp``) is throttled as the move it would be, while the
replicas it names are still the partition's and no move runs on it: a move's own throttles
cover its copy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from manager.executor.batches import IntoLimit, least_written_first
from manager.executor.config import ExecutorConfig
from manager.model.moves import CatchUp, Move, TopicPartition
from manager.throttling.adaptive import RateFigures
from manager.throttling.configs import AdminCall, ThrottleChange, Throttles
from manager.throttling.ownership import ThrottleRecord
from manager.throttling.rates import ThrottleRates
from manager.throttling.targets import WriteBudget, still_copying, throttle_targets


@dataclass(frozen=True)
class Prepared:
    change: ThrottleChange
    figures: list[RateFigures]


class Throttling:
    def __init__(
        self, config: ExecutorConfig, admin_call: AdminCall, broker_call: AdminCall | None = None
    ) -> None:
        """``broker_call``: for one broker's own configs, tried once (default: ``admin_call``)."""
        self._enabled = config.throttle_bytes_per_s is not None
        self._order = config.start_order
        self._call = admin_call
        self._broker_call = broker_call or admin_call
        self.rates = ThrottleRates(config, admin_call, self._broker_call)
        self.configs = Throttles(self._enabled, admin_call, self._broker_call)
        self.catch_ups: dict[TopicPartition, CatchUp] = {}

    def catch_up_topics(self) -> set[str]:
        return {c.topic for c in self.catch_ups.values()}

    def prepare(
        self,
        moves: Sequence[Move],
        originals: Mapping[TopicPartition, Sequence[int]],
        isr: Mapping[TopicPartition, Sequence[int]],
        live: frozenset[int],
        replicas: Mapping[TopicPartition, Sequence[int]],
    ) -> Prepared:
        """The throttles ``moves`` (each from its ``originals`` replicas) and the catch-ups
        need, by the partitions' ``replicas`` and ``isr`` now."""
        moves, originals = list(moves), dict(originals)
        for tp, catch_up in self.catch_ups.items():
            if tp not in originals and tuple(replicas.get(tp, ())) == catch_up.replicas:
                move, originals[tp] = catch_up.as_copy()
                moves.append(move)
        moves = still_copying(moves, originals, isr)  # a replica in sync is throttled no more
        targets = throttle_targets(moves, originals)
        self.rates.forget_topics(m.topic for m in moves)
        copies = [(m, originals[m.tp]) for m in moves]
        urgent = self.rates.urgent(copies, isr)
        rates, figures = self.rates.wanted(
            targets.brokers, urgent, self.configs.wanted_rates(), copies, live
        )
        return Prepared(self.configs.prepare(targets, live, rates), figures)

    def admission(
        self,
        pending: Sequence[Move],
        in_flight: Sequence[Move],
        replicas: Mapping[TopicPartition, Sequence[int]],
        isr: Mapping[TopicPartition, Sequence[int]],
    ) -> tuple[list[Move], WriteBudget | None, IntoLimit | None]:
        """``pending`` in the order to start them (``start_order``), the write budget the
        moves must fit (``ThrottleRates.write_budget``; None: none asked for), and under the
        adaptive throttle the copies each broker may receive at once (``moves_into_broker``;
        None: no such limit)."""
        if self._order == "least_written_first":
            pending = self.start_order(pending, isr)
        budget = self.rates.write_budget([*pending, *in_flight], replicas, isr)
        into = None
        if self.rates.adaptive:
            urgent = self.rates.under_min_insync(pending, isr)
            into = IntoLimit(self.rates.rule.moves_into_broker, urgent)
        return list(pending), budget, into

    def start_order(
        self, pending: Sequence[Move], isr: Mapping[TopicPartition, Sequence[int]]
    ) -> list[Move]:
        """``pending`` least written first, partitions under min.insync.replicas before all
        (``batches.least_written_first``), by the traffic the adaptive rates read."""
        writes = self.rates.partition_writes([m.tp for m in pending])
        return least_written_first(pending, writes, self.rates.under_min_insync(pending, isr))

    def commit(self, prepared: Prepared) -> list[RateFigures]:
        """Send the change; returns the figures of the rates it changed (a broker that is
        down, or refused the change, keeps its rate until a later call)."""
        self.configs.commit(prepared.change)
        now = self.configs.wanted_rates()
        return [f for f in prepared.figures if now.get((f.broker, f.config)) == str(f.rate)]

    def owned(self) -> ThrottleRecord:
        return self.configs.owned()

    def forget(self) -> None:
        """Leadership lost: what this instance set is the successor's to adopt."""
        self.configs = Throttles(self._enabled, self._call, self._broker_call)
        self.catch_ups = {}
