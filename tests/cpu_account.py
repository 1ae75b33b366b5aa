"""Where the suite's time goes, in CPU as well as in seconds: for each test module, the machine's
busy CPU-seconds (every process, the JVMs the tests start included) and the CPU-seconds the
hypervisor took (steal) while its tests ran, from /proc/stat. ``--durations`` says which tests
are long; this says whether they are long because they wait or because they burn the cores,
which decides whether running tests side by side would help (docs/testing.md).

Machine-wide on purpose: a broker's or a Spark driver's CPU belongs to the test that started
it. Anything else running on the machine is counted too; CI runs alone. Printed after the
run's summary; nothing is written without /proc/stat (it is silent elsewhere).

In two lanes (pytest-xdist, as `make test` runs the suite: tests/lanes.py) a module's
machine-wide reading would hold the other lane's too, so only the run's total is printed, by
the process that hands the modules out; one lane (`make integration`) gives the modules'.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

_STAT = Path("/proc/stat")
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")
SHOWN = 15


@dataclass
class Usage:
    wall_s: float = 0.0
    busy_s: float = 0.0
    steal_s: float = 0.0

    def add(self, other: Usage) -> None:
        self.wall_s += other.wall_s
        self.busy_s += other.busy_s
        self.steal_s += other.steal_s


def _read() -> Usage | None:
    """Now, as a running total: (wall, busy, steal) since boot; None without /proc/stat."""
    try:
        fields = _STAT.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[1:9])
    busy = (user + nice + system + irq + softirq) * _TICK_S
    return Usage(time.monotonic(), busy, steal * _TICK_S)


_by_module: dict[str, Usage] = {}
_session_start: Usage | None = None


def _in_lanes(config: pytest.Config) -> bool:
    """Whether this process hands modules out to xdist's workers (and runs none itself)."""
    return getattr(config.option, "numprocesses", None) not in (None, 0) and not hasattr(
        config, "workerinput"
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    global _session_start
    _session_start = _read()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    before = _read()
    yield
    after = _read()
    if before is None or after is None:
        return
    module = item.nodeid.split("::", 1)[0]
    _by_module.setdefault(module, Usage()).add(
        Usage(
            after.wall_s - before.wall_s,
            after.busy_s - before.busy_s,
            after.steal_s - before.steal_s,
        )
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _in_lanes(terminalreporter.config):
        _write_total(terminalreporter)
        return
    if not _by_module:
        return
    total = Usage()
    for usage in _by_module.values():
        total.add(usage)
    write = terminalreporter.write_line
    terminalreporter.section("CPU by test module (machine-wide busy CPU-seconds)")
    write(_all_line(total))
    slowest = sorted(_by_module.items(), key=lambda kv: kv[1].busy_s, reverse=True)[:SHOWN]
    for module, usage in slowest:
        write(
            f"{usage.busy_s:8.0f} CPU-s {usage.wall_s:7.0f} s "
            f"{usage.busy_s / max(usage.wall_s, 1e-9):5.2f} cores  {module}"
        )


def _all_line(total: Usage) -> str:
    cores = os.cpu_count() or 1
    return (
        f"all: {total.busy_s:.0f} CPU-s busy in {total.wall_s:.0f} s "
        f"({total.busy_s / max(total.wall_s * cores, 1e-9):.0%} of {cores} cores), "
        f"{total.steal_s:.0f} CPU-s stolen by the hypervisor"
    )


def _write_total(terminalreporter: pytest.TerminalReporter) -> None:
    now = _read()
    if _session_start is None or now is None:
        return
    total = Usage(
        now.wall_s - _session_start.wall_s,
        now.busy_s - _session_start.busy_s,
        now.steal_s - _session_start.steal_s,
    )
    terminalreporter.section("CPU of the whole run, in lanes (machine-wide busy CPU-seconds)")
    terminalreporter.write_line(f"{_all_line(total)}; by module: one lane (`make integration`)")
