"""Run the test suite in lanes: several pytest processes side by side (tests/lanes.py).

    python scripts/test_lanes.py [--lanes N] [PYTEST ARGS...]

Each lane is ``python -m pytest --lanes DIR PYTEST ARGS`` (the option comes from tests/lanes.py,
loaded by tests/conftest.py). The first lane's output is shown as it runs; every other lane's is
kept and shown after it, whole, then one line per lane. The exit status is the first non-zero
lane's, else 0. The lanes die with this process.
"""

from __future__ import annotations

import argparse
import ctypes
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _copy(stream: IO[bytes], log: Path, echo: bool) -> None:
    with log.open("wb") as out:
        for line in iter(stream.readline, b""):
            out.write(line)
            if echo:
                sys.stdout.buffer.write(line)
                sys.stdout.flush()


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    summary = [line for line in lines if line.startswith("=") or " in " in line]
    return (summary or lines or ["(no output)"])[-1].strip("= ")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        usage="%(prog)s [--lanes N] [PYTEST ARGS...]",
    )
    parser.add_argument("--lanes", type=int, default=2, help="pytest processes (default 2)")
    args, pytest_args = parser.parse_known_args(argv)
    if args.lanes < 1:
        parser.error(f"--lanes must be at least 1, not {args.lanes}")
    with tempfile.TemporaryDirectory(prefix="kmedic-lanes-") as tmp:
        lanes_dir = Path(tmp)
        procs: list[subprocess.Popen[bytes]] = []
        copiers: list[threading.Thread] = []
        logs = [lanes_dir / f"lane-{n}.log" for n in range(1, args.lanes + 1)]
        for n, log in enumerate(logs):
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", "--lanes", tmp, *pytest_args],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
            )
            assert proc.stdout is not None
            copier = threading.Thread(target=_copy, args=(proc.stdout, log, n == 0))
            copier.start()
            procs.append(proc)
            copiers.append(copier)
        try:
            codes = [proc.wait() for proc in procs]
        except KeyboardInterrupt:
            for proc in procs:
                proc.send_signal(signal.SIGINT)
            codes = [proc.wait() for proc in procs]
        for copier in copiers:
            copier.join()
        for n, log in enumerate(logs[1:], 2):
            print(f"\n{'=' * 30} lane {n} {'=' * 30}", flush=True)
            sys.stdout.buffer.write(log.read_bytes())
            sys.stdout.flush()
        print(f"\n{'=' * 30} lanes {'=' * 30}")
        for n, (log, code) in enumerate(zip(logs, codes, strict=True), 1):
            print(f"lane {n}: exit {code}: {_last_line(log)}")
        failed = [code for code in codes if code != 0]
        return failed[0] if failed else 0


if __name__ == "__main__":
    sys.exit(main())
