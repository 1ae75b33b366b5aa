"""The commands the docs, the README and the alerts tell on-call to run work as written: an
`actions tail` with options names where the audit topic is (`--config` or `--bootstrap`;
without either it fails, and the alert texts suggested exactly that)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES += sorted((ROOT / "configs" / "prometheus").glob("*.yml"))
TAIL = re.compile(r"kmedic actions tail( --[^`\"|#\n]*)")


def test_every_suggested_actions_tail_says_where_the_audit_topic_is() -> None:
    found, missing = 0, []
    for path in SOURCES:
        for line_no, line in enumerate(path.read_text().splitlines(), start=1):
            for match in TAIL.finditer(line):
                found += 1
                if "--config" not in match.group(1) and "--bootstrap" not in match.group(1):
                    missing.append(f"{path.relative_to(ROOT)}:{line_no}: {match.group(0)}")
    assert found > 5
    assert not missing, "\n".join(missing)
