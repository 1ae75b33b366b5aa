"""The test suite's own layout: what `make test` relies on to run two workers safely."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
PROCESSES = 'pytest.mark.xdist_group("processes")'


@pytest.mark.parametrize(
    "module",
    sorted(
        p.relative_to(TESTS).as_posix()
        for d in ("integration", "e2e")
        for p in (TESTS / d).glob("test_*.py")
    ),
)
def test_every_module_that_starts_processes_runs_in_their_group(module: str) -> None:
    """Two clusters at once on two cores fail timing tests: every integration and e2e module
    puts its tests in the one group pytest-xdist runs on a single worker. The marker must be
    the module's own - one added by a conftest hook is not seen by the scheduler."""
    assert PROCESSES in (TESTS / module).read_text(), f"{module}: not in the processes group"
