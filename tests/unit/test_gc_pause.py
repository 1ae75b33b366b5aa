"""The collector is paused while the planner decides (the daemon and `kmedic plan`), and
restored after exactly as it was, also when the decision raises."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from manager_fakes import Rig

import manager.daemon.deciding as deciding
import manager.daemon.observation as observation
from kmedic.gc_pause import collector_paused, kept_frozen
from manager.analyzer.partition_lists import ListsMemory
from manager.analyzer.situation import Situation
from manager.model import snapshot_file
from manager.model.decision import Decision
from manager.model.snapshot import Snapshot


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_paused_inside_and_enabled_after() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_enabled_again_when_the_body_raises() -> None:
    with pytest.raises(RuntimeError, match="boom"), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_the_daemon_decides_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = Rig(tmp_path)
    rig.sources.dead = {4}
    seen: list[bool] = []
    real = deciding.decide

    def watched(
        snap: Snapshot, situation: Situation | None = None, memory: ListsMemory | None = None
    ) -> Decision:
        seen.append(gc.isenabled())
        return real(snap, situation, memory)

    monkeypatch.setattr(deciding, "decide", watched)
    assert rig.manager.cycle().kind == "act"
    assert seen == [False]
    assert gc.isenabled()


def test_the_daemon_reads_the_cluster_and_builds_its_snapshot_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rig = Rig(tmp_path)
    seen: list[bool] = []
    real_observe = rig.sources.observe
    real_build = observation.build_snapshot

    def observe(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real_observe(*args, **kwargs)

    def build(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real_build(*args, **kwargs)

    monkeypatch.setattr(rig.sources, "observe", observe)
    monkeypatch.setattr(observation, "build_snapshot", build)
    rig.manager.cycle()
    assert seen and not any(seen)
    assert gc.isenabled()
    # A blind read restores it too.
    rig.sources.unavailable = "no broker answers"
    assert rig.manager.cycle().kind == "blind"
    assert gc.isenabled()


def test_a_snapshot_loads_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = snapshot_file.find_problems

    def checks(snap: Snapshot) -> list[str]:
        seen.append(gc.isenabled())
        return real(snap)

    monkeypatch.setattr(snapshot_file, "find_problems", checks)
    text = (Path(__file__).parents[2] / "configs" / "examples" / "healthy.json").read_text()
    snapshot_file.parse_snapshot(text)
    assert seen == [False]
    assert gc.isenabled()


def test_what_a_command_keeps_is_frozen_for_its_block_and_unfrozen_after() -> None:
    before = gc.get_freeze_count()
    seen: list[bool] = []

    def load() -> list[list[int]]:
        seen.append(gc.isenabled())
        return [[i] for i in range(1000)]

    with kept_frozen(load) as kept:
        assert gc.get_freeze_count() >= before + len(kept)
        assert gc.isenabled()
    assert seen == [False]
    assert gc.get_freeze_count() == 0
