"""``make test``'s pytest, in two lanes at once (docs/testing.md).

The first lane runs ``tests/integration`` (the session's shared cluster and the modules with
clusters of their own) with its report on the terminal as it goes; beside it, a second pytest
runs ``tests/unit``, then ``tests/e2e`` (each module with clusters of its own), its report
kept in a file and printed once the first lane is done. Most of a cluster test is waiting, so
two lanes overlap their waits on two cores. The run fails if either lane fails; stopping it
(Ctrl-C, SIGTERM) asks both pytests to stop, so each stops what its fixtures started.

Usage: ``python scripts/test_lanes.py [PYTEST ARGS...]`` (the arguments go to both lanes).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv" / "bin" / "python"
FIRST_LANE = ["tests/integration"]
SECOND_LANE = ["tests/unit", "tests/e2e"]


def _pytest(paths: list[str], extra: list[str]) -> list[str]:
    return [str(PYTHON), "-m", "pytest", *paths, "-q", "--durations=15", *extra]


def run_lanes(first_command: list[str], second_command: list[str], second_name: str) -> int:
    """Run both commands at once; the second's output after the first's; 0 if both passed."""
    with tempfile.TemporaryFile(mode="w+", prefix="kmedic-second-lane-") as report:
        # Each lane in a session of its own, so a terminal's Ctrl-C reaches it once, from here.
        second = subprocess.Popen(
            second_command,
            cwd=ROOT,
            stdout=report,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        first = subprocess.Popen(first_command, cwd=ROOT, start_new_session=True)

        def stop(signum: int, _frame: FrameType | None) -> None:
            # pytest stops on SIGINT as on Ctrl-C: its fixtures' teardowns run.
            for lane in (first, second):
                if lane.poll() is None:
                    lane.send_signal(signal.SIGINT)

        handlers = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            first_rc = first.wait()
            second_rc = second.wait()
        finally:
            for sig, handler in handlers.items():
                signal.signal(sig, handler)
        report.seek(0)
        print(f"== the second lane: {second_name}", flush=True)
        sys.stdout.write(report.read())
    print(f"== lanes: the first exit {first_rc}; the second ({second_name}) exit {second_rc}")
    sys.stdout.flush()
    return 0 if first_rc == 0 and second_rc == 0 else 1


def main(extra: list[str]) -> int:
    # The second lane leaves the cache to the first: two pytests writing one cache race.
    return run_lanes(
        _pytest(FIRST_LANE, extra),
        _pytest(SECOND_LANE, ["-p", "no:cacheprovider", *extra]),
        ", ".join(SECOND_LANE),
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
