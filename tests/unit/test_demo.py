"""The demo's pure helpers."""

from __future__ import annotations

from composition.demo import collapse
from composition.demo_views import describe
from manager.audit.log import AuditRecord
from manager.monitor.feeds import FeedStatus


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


class _View:
    def status(self) -> FeedStatus:
        return FeedStatus("kmedic.brokerstats", 2, 7, 1, True, "Broker: Not leader")

    def values(self) -> dict[bytes, int]:
        return {b"2": 1, b"1": 1}


def test_a_timed_out_wait_can_say_what_the_view_saw() -> None:
    text = describe(_View())
    assert text == (
        "kmedic.brokerstats: 7 records read (1 undecodable), keys ['1', '2'], "
        "last error: Broker: Not leader"
    )
