"""Under CI (KMEDIC_REQUIRE_TOOLS=1, set by .ci/run) a test skipped because a tool the
bootstrap installs is missing fails; every other skip stays a skip. Run for real: a pytest in
a subprocess over a test that skips both ways."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

SKIPPING = """
import pytest
from required_tools import skip_missing

def test_tool() -> None:
    skip_missing("promtool not on PATH")

def test_other() -> None:
    pytest.skip("runs in another job")
"""


def run(tmp_path: Path, required: bool) -> str:
    # Inside the tests directory, so that its conftest (and the hook) applies.
    target = TESTS / "unit" / f"test_tmp_required_{os.getpid()}_{required}.py"
    target.write_text(SKIPPING)
    env = {**os.environ, "KMEDIC_REQUIRE_TOOLS": "1" if required else "0"}
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", str(target), "-q", "-rfs", "-p", "no:cacheprovider"],
            capture_output=True,
            text=True,
            env=env,
            cwd=TESTS.parent,
            timeout=120,
        )
    finally:
        target.unlink()
    return proc.stdout


@pytest.mark.parametrize("required", [False, True])
def test_a_missing_tool_fails_under_ci_and_only_then(tmp_path: Path, required: bool) -> None:
    out = run(tmp_path, required)
    if required:
        assert "1 failed, 1 skipped" in out, out
        assert "missing tool: promtool not on PATH (KMEDIC_REQUIRE_TOOLS=1" in out, out
    else:
        assert "2 skipped" in out, out
    assert "runs in another job" in out, out
