"""Each benchmark owns one `## <name>` section of docs/bench.md; this replaces it in place."""

from __future__ import annotations

from pathlib import Path

BENCH_MD = Path(__file__).resolve().parent.parent / "docs" / "bench.md"


def write_section(name: str, text: str, path: Path = BENCH_MD) -> None:
    """Replace the section headed `## name` with ``text`` (which starts with that heading),
    or append it; every other section stays as it is."""
    current = path.read_text() if path.exists() else "# Benchmarks\n\n"
    start = current.find(f"## {name}\n")
    if start == -1:
        current = current.rstrip("\n") + "\n\n" + text
    else:
        end = current.find("\n## ", start + 1)
        rest = current[end + 1 :] if end != -1 else ""
        current = current[:start] + text.rstrip("\n") + ("\n\n" + rest if rest else "\n")
    path.write_text(current.rstrip("\n") + "\n")
