"""make test's two lanes (scripts/test_lanes.py): either lane failing fails the run, and the
second lane's report is printed whole after the first's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test_lanes.py"


def _lanes() -> ModuleType:
    spec = importlib.util.spec_from_file_location("test_lanes_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lane(text: str, rc: int) -> list[str]:
    return [sys.executable, "-c", f"print({text!r}); raise SystemExit({rc})"]


@pytest.mark.parametrize(("first_rc", "second_rc", "expected"), [(0, 0, 0), (1, 0, 1), (0, 2, 1)])
def test_the_run_fails_when_either_lane_fails(
    first_rc: int, second_rc: int, expected: int, capfd: pytest.CaptureFixture[str]
) -> None:
    rc = _lanes().run_lanes(_lane("first", first_rc), _lane("second", second_rc), "toy")
    out = capfd.readouterr().out
    assert rc == expected
    assert out.index("first") < out.index("== the second lane: toy") < out.index("second\n")
    assert f"the first exit {first_rc}; the second (toy) exit {second_rc}" in out
