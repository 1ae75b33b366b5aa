"""One snapshot from the sources and one ZooKeeper read: what the daemon decides on each
cycle, and what ``kmedic snapshot`` saves."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kmedic.errors import KmedicError
from kmedic.gc_pause import collector_paused
from manager.config import ManagerConfig
from manager.coordination.move_budget import Entry, moves_in_window
from manager.coordination.plan_document import own_partitions
from manager.coordination.state import CoordinationState
from manager.coordination.switch_store import switched
from manager.daemon.ports import Coordinator, Sources
from manager.model.moves import TopicPartition
from manager.model.snapshot import Leadership, Snapshot
from manager.monitor.carried import NOTHING, Carried
from manager.monitor.observe import build_snapshot
from manager.monitor.sources import AdminUnavailable


class ClusterUnobservable(KmedicError):
    """This cycle could not read the cluster (Admin API) or its placement config (ZooKeeper)."""


def read_state(coordinator: Coordinator) -> CoordinationState:
    """The cycle's one read of ZooKeeper; a failed read makes the cycle blind."""
    try:
        return coordinator.read_state()
    except KmedicError as exc:
        raise ClusterUnobservable(f"ZooKeeper read failed: {exc}") from exc


def observe_cluster(
    cfg: ManagerConfig,
    sources: Sources,
    state: CoordinationState,
    leadership: Leadership,
    now_s: float,
    *,
    running: Iterable[TopicPartition] = (),
    history: Iterable[Entry] = (),
    carried: Carried = NOTHING,
) -> Snapshot:
    """The snapshot, built once; each dead broker in it carries why it counts as dead.
    Partitions of the stored plan and ``running`` (moves this instance runs) are kmedic's own;
    the hourly budget counts the stored plan's move history (``history`` when nothing is
    stored); ``carried`` is what the daemon brings into the build (manager.monitor.carried)."""
    own = own_partitions(state.plan.plan if state.plan else None) | frozenset(running)
    started = list(state.plan.plan.moves_started) if state.plan else list(history)
    retired = frozenset(
        b
        for r in state.requests
        if r.kind == "decommission" and r.state == "done"
        for b in r.brokers
    )
    # The Admin answers and the snapshot are millions of objects, none of them in a cycle:
    # the collector would walk them for nothing (kmedic.gc_pause).
    with collector_paused():
        try:
            obs = sources.observe(
                int(now_s * 1000),
                placement=state.placement,
                leadership=leadership,
                own_moves=own,
                moves_last_hour=moves_in_window(started, now_s),
                retired=retired,
            )
        except AdminUnavailable as exc:
            raise ClusterUnobservable(str(exc)) from exc
        return build_snapshot(obs, switched(cfg.policy, state.switches), cfg.capacity, carried)


def standby_sentence(state: CoordinationState, dead_brokers: int) -> str:
    """A standby's cycle, in one sentence: who leads, and what it sees."""
    leader = state.leader
    who = (
        f"{leader.instance} leads with epoch {leader.epoch}" if leader else "no instance leads yet"
    )
    return f"standby: {who}; {dead_brokers} dead brokers seen"


def save_snapshot(path: Path, snap: Snapshot) -> None:
    """The cycle's snapshot, replaced whole (``kmedic plan --snapshot`` reads it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(snap.model_dump_json(indent=1))
    tmp.replace(path)
