"""A dead broker's grace period ends between two cycles: the daemon holds the next cycle just
after it ends (never sooner than MIN_CYCLE_GAP_S), so a heal is not held up to a whole interval
longer than the grace."""

from __future__ import annotations

from pathlib import Path

from manager_fakes import Rig
from planner_fixtures import NOW, broker, make, part

from manager.analyzer.health import next_grace_end_ms
from manager.daemon.pacing import MIN_CYCLE_GAP_S
from manager.model.snapshot import Snapshot

GRACE = 15_000


def _snap(*dead_for_ms: int, short_grace_ms: int = 60_000) -> Snapshot:
    brokers = [broker(b, f"/r{b % 2}") for b in range(1, 4)]
    brokers += [
        broker(10 + n, "/r0", alive=False, dead_since_ms=NOW - ago, last_stats_ms=NOW - ago)
        for n, ago in enumerate(dead_for_ms)
    ]
    policy = {"dead_grace_ms": GRACE, "write_unavailable_grace_ms": short_grace_ms}
    return make(brokers, {"t": [part(0, [1, 2])]}, policy=policy)


def test_the_first_grace_to_end_is_the_one_reported() -> None:
    assert next_grace_end_ms(_snap()) is None
    assert next_grace_end_ms(_snap(GRACE + 1)) is None  # already over
    assert next_grace_end_ms(_snap(5_000, 12_000)) == NOW + GRACE - 12_000


def test_the_shorter_grace_of_write_unavailable_partitions_wakes_a_cycle_too() -> None:
    """Issue 39.6: the cycle that may restore writes runs when the short grace ends."""
    assert next_grace_end_ms(_snap(3_000, short_grace_ms=5_000)) == NOW + 2_000
    assert next_grace_end_ms(_snap(6_000, short_grace_ms=5_000)) == NOW + GRACE - 6_000


def _rig_at_snapshot(tmp_path: Path, snap: Snapshot) -> Rig:
    rig = Rig(tmp_path)
    rig.clock.now = NOW / 1000
    rig.manager.last_snapshot = snap
    return rig


def test_the_next_cycle_is_held_when_the_grace_ends(tmp_path: Path) -> None:
    rig = _rig_at_snapshot(tmp_path, _snap(GRACE - 2_000))  # 2 s of grace left
    started = rig.clock.monotonic() - 0.5  # this cycle took half a second
    at = rig.manager._next_cycle_at(started)
    assert abs(at - (rig.clock.monotonic() + 2.05)) < 1e-6
    assert at < started + rig.cfg.interval_s


def test_without_a_grace_running_the_interval_holds(tmp_path: Path) -> None:
    for snap in (_snap(), _snap(GRACE + 60_000)):
        rig = _rig_at_snapshot(tmp_path, snap)
        started = rig.clock.monotonic()
        assert rig.manager._next_cycle_at(started) == started + rig.cfg.interval_s


def test_a_grace_ending_later_than_the_interval_changes_nothing(tmp_path: Path) -> None:
    rig = _rig_at_snapshot(tmp_path, _snap(1_000))  # 14 s left
    rig.cfg.interval_s = 3
    started = rig.clock.monotonic()
    assert rig.manager._next_cycle_at(started) == started + 3


def test_never_two_cycles_closer_than_the_minimum_gap(tmp_path: Path) -> None:
    rig = _rig_at_snapshot(tmp_path, _snap(GRACE - 10))  # 10 ms of grace left
    assert rig.manager._next_cycle_at(rig.clock.monotonic()) == (
        rig.clock.monotonic() + MIN_CYCLE_GAP_S
    )
