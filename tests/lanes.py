"""Lanes: one suite run by several pytest processes side by side, a module at a time.

The suite is bound by CPU for part of its length and by waits (graces, fencing, session
timeouts) for the rest (tests/cpu_account.py says which module is which); one process leaves a
core idle while a test waits. ``scripts/test_lanes.py`` starts two pytest processes over the
same tests with ``--lanes DIR``; each collects everything and runs the modules it claims:

- **A module is the unit.** Its tests run in one lane, in file order, so module-scoped
  fixtures (a module's own cluster) start once. Each lane has its own session fixtures (the
  shared cluster, the Spark session): started by the first module that asks for them.
- **Claimed once.** Lanes walk the same order and claim a module by creating a file named
  after it in DIR (``O_EXCL``): exactly one lane runs it; a module no lane claimed does not
  run, which the runner's count shows.
- **Longest first.** Modules are taken in descending order of ``MODULE_SECONDS`` (measured
  wall seconds, one lane, on this kind of machine), the rest in file order, so the short unit
  modules fill the lanes' tails.
- **Alone when timing is the point.** A module marked ``alone`` (``pytestmark``) runs with
  nothing beside it: it takes DIR's lock exclusively, every other module takes it shared.
  These are the tests whose assertions bound elapsed time against the cluster's own clocks
  (a takeover within the session timeout, a wait seen within 12 s, a duty-cycled broker's
  probes): on two shared cores, a neighbour's JVM start would be their failure, not
  kmedic's. A turnstile lock in front keeps a waiting ``alone`` module from being starved by
  the other lane's next shared claim.

Without ``--lanes`` nothing changes: pytest's own loop runs every test in file order.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Wall seconds per module, one lane (clean-clone run of 2026-11-30); unlisted modules weigh 0.
MODULE_SECONDS = {
    "tests/e2e/test_manager_failover.py": 424,
    "tests/integration/test_benchmarks.py": 308,
    "tests/e2e/test_manager_heals.py": 275,
    "tests/integration/test_streaming_restart.py": 189,
    "tests/integration/test_network_faults.py": 186,
    "tests/e2e/test_soak_short.py": 160,
    "tests/integration/test_manager_outage.py": 132,
    "tests/integration/test_controller_quorum.py": 131,
    "tests/e2e/test_secure_cluster.py": 127,
    "tests/integration/test_stream_on_spark_cluster.py": 124,
    "tests/integration/test_operator_requests.py": 108,
    "tests/integration/test_kafka_41.py": 92,
    "tests/unit/test_streaming_validate.py": 77,
    "tests/integration/test_image.py": 67,
    "tests/integration/test_readiness_cluster.py": 64,
}
ALONE = "alone"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--lanes",
        metavar="DIR",
        default=None,
        help="run as one of several lanes sharing DIR: claim modules one at a time "
        "(tests/lanes.py; scripts/test_lanes.py starts the lanes)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{ALONE}: under lanes, the module runs with no other module beside it (tests/lanes.py)",
    )


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def by_module(items: list[pytest.Item]) -> dict[str, list[pytest.Item]]:
    """Each module's items in their collected order; modules in first-seen order."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(module_of(item), []).append(item)
    return modules


def run_order(modules: dict[str, list[pytest.Item]]) -> list[str]:
    """``alone`` modules first (they serialise the lanes: best done while every lane is
    fresh), then longest first, then file order."""
    names = list(modules)

    def key(name: str) -> tuple[bool, int, int]:
        alone = any(item.get_closest_marker(ALONE) for item in modules[name])
        return (not alone, -MODULE_SECONDS.get(name, 0), names.index(name))

    return sorted(names, key=key)


def claim(lanes_dir: Path, module: str) -> bool:
    """True for exactly one of the lanes that ask for ``module``."""
    marker = lanes_dir / "claimed" / module.replace("/", "__")
    marker.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(f"{os.getpid()}\n")
    return True


@contextlib.contextmanager
def module_lock(lanes_dir: Path, alone: bool) -> Iterator[None]:
    """Shared for an ordinary module, exclusive for an ``alone`` one; the turnstile is held
    only while asking, so a waiting exclusive request goes before later shared ones."""
    with (
        (lanes_dir / "turnstile.lock").open("a") as turnstile,
        (lanes_dir / "modules.lock").open("a") as lock,
    ):
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        finally:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> bool | None:
    option = session.config.getoption("lanes")
    if option is None or session.config.option.collectonly:
        return None  # pytest's own loop
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(f"{session.testsfailed} errors during collection")
    lanes_dir = Path(option)
    modules = by_module(session.items)
    claimed = (name for name in run_order(modules) if claim(lanes_dir, name))
    current = next(claimed, None)
    while current is not None:
        items = modules[current]
        alone = any(item.get_closest_marker(ALONE) for item in items)
        following: str | None = None
        with module_lock(lanes_dir, alone):
            for i, item in enumerate(items):
                if i + 1 < len(items):
                    nextitem: pytest.Item | None = items[i + 1]
                else:  # claimed before the last test, so its teardown knows what follows
                    following = next(claimed, None)
                    nextitem = modules[following][0] if following is not None else None
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                if session.shouldfail:
                    raise session.Failed(session.shouldfail)
                if session.shouldstop:
                    raise session.Interrupted(session.shouldstop)
        current = following
    return True
