"""The slow-broker tracks kept across cycles (the score itself: manager.analyzer.slowness).

Every instance keeps them, standbys included, from the same stats topic: a standby that takes
over knows who was slow and who is to get leadership back. A restart of every instance starts
them over (a slow broker is found again within ``slow_score`` samples; one that was demoted
before keeps its demoted order until an operator or the even-network goal moves it). The
leader audits each change the cycles bring.
"""

from __future__ import annotations

from manager.analyzer.slowness import Change, Track, demoted, judge, too_many_slow
from manager.model.policy import Policy
from manager.model.slowness import SlowBrokerPolicy
from manager.model.snapshot import Broker
from manager.model.topics import Topics


class SlowTracker:
    def __init__(self) -> None:
        self._tracks: dict[int, Track] = {}
        self._changes: list[Change] = []
        self.cluster_slow = False

    def judge(
        self, brokers: tuple[Broker, ...], topics: Topics, policy: Policy, now_ms: int
    ) -> tuple[Broker, ...]:
        """The brokers, each live one with its slowness (an input of the cycle's snapshot
        build: manager.monitor.carried); changes wait for ``take_changes``."""
        slow_policy = policy.slow_brokers
        self._tracks, judged, changes = judge(self._tracks, brokers, topics, slow_policy, now_ms)
        self._changes += changes
        live = [b for b in judged if b.alive]
        slow = [b.id for b in live if b.slowness and b.slowness.state == "slow"]
        cluster_slow = too_many_slow(len(slow), len(live), slow_policy)
        if cluster_slow != self.cluster_slow:
            self.cluster_slow = cluster_slow
            said = (
                f"the cluster is slow: brokers {slow} of {len(live)} are, more than "
                f"policy.slow_brokers.max_slow_fraction allows: none is demoted"
                if cluster_slow
                else "the cluster is no longer slow"
            )
            self._changes.append(Change(None, "slow" if cluster_slow else "ok", 0.0, said))
        return judged

    def demoted(self, brokers: tuple[int, ...], policy: SlowBrokerPolicy) -> None:
        """A demotion of ``brokers`` was started: counted against ``max_demotions``."""
        self._changes += demoted(self._tracks, brokers, policy)

    def take_changes(self) -> list[Change]:
        taken, self._changes = self._changes, []
        return taken
