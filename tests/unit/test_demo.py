"""The demo's pure helpers."""

from __future__ import annotations

from composition.demo import PAGED_EXIT, collapse, demo_exit_code, plan_over
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


def test_the_story_ends_once_every_move_ended_and_quiet_cycles_followed() -> None:
    def rec(kind: str, summary: str = "x") -> AuditRecord:
        return AuditRecord(cluster="c", instance="i", epoch=1, kind=kind, summary=summary)  # type: ignore[arg-type]

    heal = [rec("decision", "act (heal): ..."), rec("action_started"), rec("action_started")]
    assert not plan_over(heal, 2)
    one_done = [
        *heal,
        rec("action_completed"),
        rec("decision", "noop: waiting"),
        rec("decision", "noop"),
    ]
    assert not plan_over(one_done, 2)  # a move still runs (the demo stopped here before)
    done = [*heal, rec("action_completed"), rec("action_completed"), rec("decision", "noop: a")]
    assert not plan_over(done, 2)
    assert plan_over([*done, rec("decision", "noop: b")], 2)
    assert not plan_over([*done, rec("decision", "refuse: ..."), rec("decision", "wait: x")], 2)


def test_the_demo_fails_when_anything_paged() -> None:
    """Issue 39.5: a page after the kill is the demo's failure, not a line that exits 0."""
    alert = AuditRecord(cluster="c", instance="i", epoch=1, kind="alert_raised", summary="x")  # type: ignore[arg-type]
    assert demo_exit_code([]) == 0
    assert demo_exit_code([alert]) == PAGED_EXIT != 0
