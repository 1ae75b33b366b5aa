"""The systemd units shipped in configs/systemd: each passes `systemd-analyze verify`, and each
ExecStart is a kmedic command line that kmedic's own parser accepts."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from composition.cli import build_parser

UNITS = sorted((Path(__file__).parents[2] / "configs" / "systemd").glob("*.service"))
INSTALLED = "/opt/kmedic/bin/kmedic"  # where the units expect kmedic (docs/operations.md)


def exec_start(unit: Path) -> list[str]:
    lines = [x for x in unit.read_text().splitlines() if x.startswith("ExecStart=")]
    assert len(lines) == 1, f"{unit.name}: one ExecStart"
    return shlex.split(lines[0].removeprefix("ExecStart="))


def test_one_unit_per_role() -> None:
    assert [u.name for u in UNITS] == [
        "kmedic-agent.service",
        "kmedic-manager.service",
        "kmedic-stream.service",
    ]


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_exec_start_is_a_kmedic_command_line(unit: Path) -> None:
    argv = exec_start(unit)
    assert argv[0] == INSTALLED
    role = unit.stem.removeprefix("kmedic-")
    args = build_parser().parse_args(argv[1:])
    assert args.command == role and str(args.config) == f"/etc/kmedic/{role}.yaml"


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="needs systemd-analyze (systemd) on PATH"
)
@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_systemd_analyze_verify_passes(unit: Path, tmp_path: Path) -> None:
    # verify checks that ExecStart's program exists: point it at this checkout's kmedic.
    kmedic = Path(sys.executable).with_name("kmedic")
    copy = tmp_path / unit.name
    copy.write_text(unit.read_text().replace(INSTALLED, str(kmedic)))
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(copy)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and not proc.stderr.strip(), proc.stderr
