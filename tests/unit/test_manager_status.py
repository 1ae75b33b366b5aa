"""The leader's status page: the load history is fed by its decisions (not by decisions on
stale loads), and the page shows it with the moves' running times."""

from __future__ import annotations

from pathlib import Path

from manager_fakes import Rig

from manager.web.status_page import render_html


def test_each_fresh_decision_adds_to_the_load_history(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    assert rig.manager.cycle().kind == "noop"
    rig.clock.advance(60)
    assert rig.manager.cycle().kind == "noop"
    series = rig.manager.status()["history"]["series"]
    assert set(series) == {"1", "2", "3", "4"}
    assert all(len(points) == 2 for points in series.values())
    assert render_html(rig.manager.status()).count('class="series"') == 4


def test_a_decision_on_stale_loads_adds_nothing(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.sources.stats_age_ms = 3_600_000
    outcome = rig.manager.cycle()
    assert "stale_load_data" in {r.code for r in outcome.decision.reasons}  # type: ignore[union-attr]
    assert rig.manager.status()["history"]["series"] == {}


def test_a_running_move_shows_how_long_it_has_run(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.sources.dead = {4}
    assert rig.manager.cycle().kind == "act"
    rig.executor.step()
    rig.clock.advance(30)
    rig.manager.cycle()
    moves = rig.manager.status()["moves"]
    running = [m for m in moves if m["status"] == "in_flight"]
    assert running and all(m["running_s"] >= 30 for m in running)
