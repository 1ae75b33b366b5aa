"""What a kmedic process imports before it does anything: every role and tool builds the whole
command parser (composition/cli.py), so a heavy library imported at the top of any command's
module is paid by every agent, stream, manager and CLI call. OR-Tools (with pandas, about 0.7 s
of CPU per process) is imported by the exact heal's first solve, or by a manager at its start;
the soak's rig (kafka-python, Prometheus' parser: about 0.3 s) by `kmedic soak` alone."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("ortools", "pandas", "kafka", "composition.soak.run")


def test_building_the_command_parser_loads_no_solver() -> None:
    code = (
        "import sys, composition.cli\n"
        "composition.cli.build_parser()\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_a_manager_loads_the_solver_at_start() -> None:
    code = (
        "import sys\n"
        "from manager.analyzer.heal_solver import load_solver\n"
        "load_solver()\n"
        "print('ortools.sat.python.cp_model' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"
