"""bench/bench_docs.write_section: a benchmark replaces its own section and nothing else."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_docs.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_docs", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_docs"] = module
    spec.loader.exec_module(module)
    return module


def test_sections_are_replaced_in_place_and_appended_when_new(tmp_path: Path) -> None:
    docs = load()
    path = tmp_path / "bench.md"
    path.write_text("# Benchmarks\n\n## a\n\nold a\n\n## b\n\nkeep b\n")
    docs.write_section("a", "## a\n\nnew a\n", path)
    docs.write_section("c", "## c\n\nnew c\n", path)
    docs.write_section("b", "## b\n\nnew b\n", path)
    assert path.read_text() == "# Benchmarks\n\n## a\n\nnew a\n\n## b\n\nnew b\n\n## c\n\nnew c\n"


def test_the_figures_page_is_one_page() -> None:
    """docs/bench.md holds today's figures only, each section written by its bench; a reading
    by hand goes to docs/bench-history.md, and the page stays under 400 lines."""
    lines = (BENCH.parents[1] / "docs" / "bench.md").read_text().splitlines()
    assert len(lines) < 400, f"docs/bench.md has {len(lines)} lines: move readings to the history"
