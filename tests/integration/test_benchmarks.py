"""Every benchmark still runs: each script in bench/ at its smoke size (``--quick``), which
starts what it measures (a local cluster, a Spark session, the manager and agents) and prints
its section, leaving docs/bench.md as it was. It proves the script works end to end, not its
figures (those are measured by running it without ``--quick``; docs/bench.md)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
SCRIPTS = sorted(p.name for p in BENCH.glob("bench_*.py") if p.name != "bench_docs.py")
# The section each prints, and how long its smoke run may take before it counts as hung.
SECTIONS = {
    "bench_agent.py": ("## agent", 120),
    "bench_audit.py": ("## audit", 300),
    "bench_clients.py": ("## clients", 600),
    "bench_cycle.py": ("## cycle", 300),
    "bench_fleet_manager.py": ("## the real manager at fleet scale", 300),
    "bench_heal.py": ("## heal", 600),
    # Its smoke run exits non-zero when a run misses its bound: a test of the dead broker's
    # classes (restarting, crash_looping, host_lost) on real processes.
    "bench_oracle.py": ("## wait or heal", 600),
    "bench_planner.py": ("## planner", 300),
    "bench_readiness.py": ("## readiness", 120),
    # Its smoke run exits non-zero when the estimate falls short of the loss Kafka's
    # verifiable clients count: a test of `kmedic recover` on a real offline partition.
    "bench_recover.py": ("## the last resort", 600),
    "bench_streaming.py": ("## streaming", 600),
}


def test_every_benchmark_has_a_smoke_run() -> None:
    assert sorted(SECTIONS) == SCRIPTS


@pytest.mark.integration
@pytest.mark.parametrize("script", SCRIPTS)
def test_the_benchmark_runs_at_its_smoke_size(script: str, tmp_path: Path) -> None:
    section, limit_s = SECTIONS[script]
    docs = ROOT / "docs" / "bench.md"
    before = hashlib.sha256(docs.read_bytes()).hexdigest()
    log = tmp_path / "out.log"
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, str(BENCH / script), "--quick"],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=limit_s,
            check=False,
        )
    text = log.read_text(errors="replace")
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{text[-4000:]}"
    assert section in text, text[-4000:]
    if script == "bench_clients.py":  # shaped by default: its smoke run prints a timeline
        assert "in/out MB/s" in text, text[-4000:]
    assert hashlib.sha256(docs.read_bytes()).hexdigest() == before, "--quick wrote docs"
