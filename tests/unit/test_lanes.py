"""The suite's lanes (tests/lanes.py, scripts/test_lanes.py): run on a small suite of their
own, written here, as two real pytest processes. Every test runs exactly once, a module in one
lane, an ``alone`` module beside nothing, and one failure anywhere fails the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lanes import claim

ROOT = Path(__file__).resolve().parents[2]
RUNNER = ROOT / "scripts" / "test_lanes.py"

CONFTEST = f"""
import sys
sys.path.insert(0, {str(ROOT / "tests")!r})
pytest_plugins = ["lanes"]
"""

MODULE = """
import os, time
import pytest
{mark}

def _log(what):
    with open(os.environ["LANES_LOG"], "a") as out:
        out.write(f"{{__name__}} {{what}} {{os.getpid()}} {{time.monotonic()}}\\n")

@pytest.mark.parametrize("n", range(3))
def test_step(n):
    _log("start")
    time.sleep(0.2)
    _log("end")
    assert {ok}
"""


def write_suite(root: Path, failing: bool) -> Path:
    tests = root / "suite"
    tests.mkdir()
    (tests / "conftest.py").write_text(CONFTEST)
    for name in ("test_a", "test_b", "test_c", "test_d"):
        (tests / f"{name}.py").write_text(MODULE.format(mark="", ok="True"))
    (tests / "test_alone.py").write_text(
        MODULE.format(mark="pytestmark = pytest.mark.alone", ok="True")
    )
    (tests / "test_fails.py").write_text(MODULE.format(mark="", ok=str(not failing)))
    return tests


def run_lanes(tmp_path: Path, failing: bool) -> tuple[int, str, list[list[str]]]:
    suite = write_suite(tmp_path, failing)
    log = tmp_path / "runs.log"
    done = subprocess.run(
        [sys.executable, str(RUNNER), "--lanes", "2", str(suite), "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        env={"LANES_LOG": str(log), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr, [line.split() for line in log.open()]


def spans(runs: list[list[str]]) -> dict[str, tuple[float, float, str]]:
    """Each module's (first start, last end, pid)."""
    out: dict[str, tuple[float, float, str]] = {}
    for module, what, pid, at in runs:
        first, last, _ = out.get(module, (float("inf"), 0.0, pid))
        t = float(at)
        out[module] = (min(first, t), max(last, t) if what == "end" else last, pid)
    return out


def test_every_test_runs_once_a_module_in_one_lane_and_alone_beside_nothing(
    tmp_path: Path,
) -> None:
    code, output, runs = run_lanes(tmp_path, failing=False)
    assert code == 0, output
    starts = [(module, pid) for module, what, pid, _ in runs if what == "start"]
    assert sorted(m for m, _ in starts) == sorted(
        m
        for m in ("test_a", "test_b", "test_c", "test_d", "test_alone", "test_fails")
        for _ in range(3)
    ), output
    assert all(len({pid for m, pid in starts if m == module}) == 1 for module, _ in starts)
    assert len({pid for _, pid in starts}) == 2, "both lanes ran modules"
    by_module = spans(runs)
    alone_from, alone_to, _ = by_module.pop("test_alone")
    for module, (start, end, _) in by_module.items():
        assert end <= alone_from or start >= alone_to, f"{module} ran beside the alone module"
    assert "lane 1: exit 0" in output and "lane 2: exit 0" in output, output


def test_a_failure_in_either_lane_fails_the_run(tmp_path: Path) -> None:
    code, output, runs = run_lanes(tmp_path, failing=True)
    assert code == 1, output
    assert "3 failed" in output, output
    assert len([r for r in runs if r[1] == "start"]) == 18


def test_a_module_is_claimed_once(tmp_path: Path) -> None:
    assert claim(tmp_path, "tests/unit/test_x.py")
    assert not claim(tmp_path, "tests/unit/test_x.py")
    assert claim(tmp_path, "tests/unit/test_y.py")
