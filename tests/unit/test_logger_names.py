"""Loggers are named by module: ``get_logger(__name__)``, so a log line says where it came from."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("kmedic", "agent", "streaming", "manager", "composition")


def _named_by_module(arg: ast.expr) -> bool:
    if isinstance(arg, ast.Name):
        return arg.id == "__name__"
    if isinstance(arg, ast.JoinedStr) and arg.values:  # f"{__name__}.rdkafka..."
        first = arg.values[0]
        return isinstance(first, ast.FormattedValue) and _named_by_module(first.value)
    return False


def _logger_calls() -> list[tuple[str, int, ast.Call]]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in ("get_logger", "getLogger") and node.args:
                    found.append((str(path.relative_to(ROOT)), node.lineno, node))
    return found


def test_there_are_loggers_to_check() -> None:
    assert len(_logger_calls()) >= 20


def test_every_logger_is_named_by_its_module() -> None:
    # kmedic/logging.py itself names the loggers of noisy libraries to quieten them.
    bad = [
        f"{path}:{line}"
        for path, line, call in _logger_calls()
        if path != "kmedic/logging.py" and not _named_by_module(call.args[0])
    ]
    assert bad == []


def test_the_check_recognises_a_fixed_name() -> None:
    call = ast.parse('get_logger("manager.daemon")').body[0].value  # type: ignore[attr-defined]
    assert not _named_by_module(call.args[0])
    call = ast.parse('getLogger(f"{__name__}.rdkafka")').body[0].value  # type: ignore[attr-defined]
    assert _named_by_module(call.args[0])
