"""A fresh instance reads the stats and load topics to their ends before its first decision,
for at most ``WARM_UP_LIMIT_S``: judged half-read, the loads look stale and a heal looks
unneeded. Once every feed was read to its end (or the limit ran out) it is warm for good:
stale or missing records are judged as such from then on.

It rehearses once (``rehearse``, handed in at construction) as it starts, before its first
cycle: the cluster observed and a decision planned on what has been read so far, both thrown
away, never audited. (Rehearsing at the first cycle instead missed every start whose feeds
were read before it; rehearsing inside that cycle would only have made the cycle longer.)
The first real decision then finds the planner's lists built and their memory in place, as
every later one does: at fleet scale the first decision of a fresh instance took 0.5-0.9 s
to the others' 0.22, most of it building the planner's per-partition lists from nothing and
faulting in the memory they live in (docs/bench.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kmedic.errors import KmedicError
from kmedic.gc_pause import collector_paused
from kmedic.logging import get_logger
from manager.analyzer.partition_lists import ListsMemory
from manager.analyzer.planner import decide
from manager.config import ManagerConfig
from manager.daemon.observation import observe_cluster, read_state
from manager.daemon.ports import Coordinator, Sources
from manager.model.snapshot import Leadership
from manager.monitor.feeds import FeedStatus

log = get_logger(__name__)

WARM_UP_LIMIT_S = 30.0


class WarmUp:
    def __init__(
        self, monotonic: Callable[[], float], rehearse: Callable[[], None] | None = None
    ) -> None:
        self._monotonic = monotonic
        self._rehearse = rehearse
        self._started_at = monotonic()
        self._warm = False
        self.reading: list[str] = []  # the topics the last look found still being read

    def still_reading(self, feeds: Callable[[], Iterable[FeedStatus]]) -> list[str]:
        """The topics not yet read to their end (empty once warm)."""
        if not self._warm:
            behind = [f.topic for f in feeds() if not f.caught_up]
            if not behind or self._monotonic() - self._started_at >= WARM_UP_LIMIT_S:
                self._warm = True
            self.reading = [] if self._warm else behind
            if self.reading:
                self.rehearse_once()
        return self.reading

    def rehearse_once(self) -> None:
        """The rehearsal, if it has not run yet: at start, or at the first look while a feed
        is still being read (an instance never started, in tests)."""
        if self._rehearse is not None:
            rehearse, self._rehearse = self._rehearse, None
            rehearse()


def rehearsal(
    cfg: ManagerConfig,
    sources: Sources,
    coordinator: Coordinator,
    instance: str,
    now_s: Callable[[], float],
    memory: ListsMemory,
) -> Callable[[], None]:
    """The rehearsal of one cycle: observed and decided as this instance stands (a standby's
    gates hold every goal back; the lists are built all the same), nothing kept but the
    planner's lists and the sources' own memory of what they saw."""

    def rehearse() -> None:
        try:
            state = read_state(coordinator)
            leadership = Leadership(
                holder=instance,
                epoch=coordinator.epoch,
                current_epoch=state.current_epoch,
                is_leader=coordinator.may_act(),
            )
            snap = observe_cluster(cfg, sources, state, leadership, now_s())
            with collector_paused():
                decide(snap, memory=memory)
        except KmedicError as exc:  # the cluster unobservable: the first cycle will say so
            log.info("warm_up_rehearsal_skipped", error=str(exc))

    return rehearse
