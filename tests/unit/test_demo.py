"""The demo's pure helpers."""

from __future__ import annotations

from kmedic.demo import collapse
from manager.audit import AuditRecord


def test_the_demo_shows_a_repeated_record_once_with_its_count() -> None:
    def rec(kind: str, summary: str) -> AuditRecord:
        return AuditRecord(cluster="c", instance="i", epoch=1, kind=kind, summary=summary)  # type: ignore[arg-type]

    records = [rec("decision", "noop"), rec("decision", "noop"), rec("alert_raised", "a")]
    records.append(rec("decision", "noop"))
    assert collapse(records) == [
        ("decision", "noop", 2),
        ("alert_raised", "a", 1),
        ("decision", "noop", 1),
    ]
