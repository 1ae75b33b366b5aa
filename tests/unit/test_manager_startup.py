"""Waiting for ZooKeeper at start (manager/daemon/startup.py): retried with a growing wait,
one line per attempt, ended by a stop (issue 39.10)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kmedic.errors import KmedicError
from manager.coordination.znodes import CoordinationError
from manager.daemon import startup


class _Flaky:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        if self.starts <= self.failures:
            raise CoordinationError("cannot connect to ZooKeeper at z:2181 within 15.0s")


class _Stop(threading.Event):
    """A stop whose waits return at once and are recorded."""

    def __init__(self, stop_after: int | None = None) -> None:
        super().__init__()
        self.waited: list[float] = []
        self.stop_after = stop_after

    def wait(self, timeout: float | None = None) -> bool:
        self.waited.append(timeout or 0.0)
        if self.stop_after is not None and len(self.waited) >= self.stop_after:
            self.set()
        return self.is_set()


def test_zookeeper_is_retried_until_it_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    lines: list[dict[str, object]] = []
    monkeypatch.setattr(startup.log, "warning", lambda event, **kw: lines.append(kw))
    coordinator, stop = _Flaky(failures=7), _Stop()
    assert startup.start_coordination(coordinator, stop)  # type: ignore[arg-type]
    assert coordinator.starts == 8
    assert stop.waited == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert [line["attempt"] for line in lines] == list(range(1, 8))


def test_a_stop_ends_the_wait() -> None:
    coordinator, stop = _Flaky(failures=100), _Stop(stop_after=2)
    assert not startup.start_coordination(coordinator, stop)  # type: ignore[arg-type]
    assert coordinator.starts == 2


def test_the_mode_flag_reaches_the_manager_as_a_flag_not_as_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 71.2: `--mode` was copied into the config, so a mode set at run time beat it.
    It reaches the manager as the flag, above the run-time mode; the config keeps its own."""
    import manager.daemon.wiring as wiring
    from composition.cli import main

    seen: list[tuple[str, str | None]] = []

    def build(cfg: Any, *, mode_flag: str | None = None) -> Any:
        seen.append((cfg.mode, mode_flag))
        raise KmedicError("stop here")

    monkeypatch.setattr(wiring, "build_manager", build)
    monkeypatch.setattr("manager.cli.daemon.check_credentials", lambda *a, **k: None)
    config = Path(__file__).parents[2] / "configs" / "manager.example.yaml"
    assert main(["manager", "--config", str(config), "--mode", "act"]) == 1
    assert main(["manager", "--config", str(config)]) == 1
    assert seen == [("observe", "act"), ("observe", None)]


def test_once_gives_up_on_zookeeper_within_its_bound(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 72.3: `kmedic manager --once` with nothing reachable had not ended after 90 s (a
    daemon waits for ZooKeeper for as long as it takes; one cycle is a tool's run)."""
    import manager.cli.daemon as daemon_cli
    import manager.daemon.wiring as wiring
    from composition.cli import main

    class Waiting:
        """A manager whose start waits for a ZooKeeper that never answers, until stopped."""

        instance = "m1"

        def __init__(self) -> None:
            self.stopped = threading.Event()
            self.coordinator = type("C", (), {"connected": False, "shutdown_reason": None})()
            self.cycles = 0

        def request_stop(self) -> None:
            self.stopped.set()

        def start(self) -> None:
            assert self.stopped.wait(10), "never stopped"

        def run_once(self) -> None:
            self.cycles += 1

        def stop(self) -> None:
            pass

    made = Waiting()
    monkeypatch.setattr(wiring, "build_manager", lambda cfg, **_: made)
    monkeypatch.setattr(daemon_cli, "check_credentials", lambda *a, **k: None)
    monkeypatch.setattr(daemon_cli, "ONCE_REACH_S", 0.2)
    config = Path(__file__).parents[2] / "configs" / "manager.example.yaml"
    assert main(["manager", "--config", str(config), "--once"]) == 5
    assert "ZooKeeper at 127.0.0.1:2181 did not answer within 0 s: no cycle ran" in (
        capsys.readouterr().err
    )
    assert made.cycles == 0
