"""One concern per module: no module of the manager grows past 400 lines (a sign to split
it; docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path

LIMIT = 400
MANAGER = Path(__file__).resolve().parents[2] / "manager"


def test_no_manager_module_is_over_the_limit() -> None:
    sizes = {p: len(p.read_text().splitlines()) for p in MANAGER.rglob("*.py")}
    assert len(sizes) > 50
    over = {str(p.relative_to(MANAGER)): n for p, n in sizes.items() if n > LIMIT}
    assert not over, f"split these modules (over {LIMIT} lines): {over}"
