"""The records of one executor step go to the audit log together: one wait for the audit
topic's acknowledgement per step, and what happened before a change is written before it."""

from __future__ import annotations

import threading
from pathlib import Path

from manager_fakes import MemorySink, Rig

from manager.audit.log import AuditLog
from manager.daemon.audit_trail import AuditTrail
from manager.web.metrics import ManagerMetrics


def _trail(tmp_path: Path) -> tuple[AuditTrail, MemorySink]:
    sink = MemorySink()
    log = AuditLog(sink, tmp_path)
    trail = AuditTrail(log, ManagerMetrics("c"), cluster="c", instance="i", epoch=lambda: 1)
    return trail, sink


def test_the_moves_a_step_starts_reach_the_audit_topic_in_one_write(tmp_path: Path) -> None:
    """A heal of two moves: the decision is written before the moves (its own send), and both
    moves' starts together. One send per record waited on a slow audit leader once per
    move: a demotion's elections came 28 s late (CI, test_network_faults' slow link)."""
    rig = Rig(tmp_path)
    rig.executor.tell_starts = True
    rig.sources.dead = {4}
    outcome = rig.manager.cycle()
    assert outcome.kind == "act", outcome.sentence
    kinds = [r.kind for r in rig.sink.records]
    assert kinds[-2:] == ["action_started", "action_started"], kinds
    assert kinds.index("decision") < kinds.index("action_started")
    assert rig.sink.sends[-1] == 2, rig.sink.sends
    assert [r.summary for r in rig.manager.trail.recent_records()][-2:] == [
        r.summary for r in rig.sink.records[-2:]
    ]


def test_what_a_step_gathered_is_written_before_its_change(tmp_path: Path) -> None:
    """A record made in a step before its batch starts is in the audit log when the fenced
    plan write that precedes the batch happens."""
    rig = Rig(tmp_path)
    rig.sources.dead = {4}
    seen_at_write: list[list[str]] = []
    plans = rig.coordinator.plans
    write = plans.write

    def watched(plan, expected_version):  # type: ignore[no-untyped-def]
        seen_at_write.append([r.summary for r in rig.sink.records])
        return write(plan, expected_version)

    plans.write = watched  # type: ignore[method-assign]
    rig.executor.on_step = lambda: rig.manager.trail.record("decision", "told in the step")
    assert rig.manager.cycle().kind == "act"
    # the plan's own write (before the step), then the fenced one before the batch
    assert "told in the step" not in seen_at_write[0]
    assert seen_at_write[1][-1] == "told in the step"


def test_gathered_records_are_written_in_order_at_the_end_or_at_a_flush(
    tmp_path: Path,
) -> None:
    trail, sink = _trail(tmp_path)
    with trail.gathered():
        trail.record("decision", "one")
        with trail.gathered():  # nested: the outermost writes
            trail.record("decision", "two")
        assert sink.records == []
        trail.flush()
        assert [r.summary for r in sink.records] == ["one", "two"]
        trail.record("decision", "three")
        trail.record("decision", "four")
        assert len(sink.records) == 2
    assert [r.summary for r in sink.records] == ["one", "two", "three", "four"]
    assert sink.sends == [2, 2]
    trail.record("decision", "five")  # outside: at once
    assert sink.sends == [2, 2, 1]


def test_another_threads_record_is_not_held_by_a_gathering(tmp_path: Path) -> None:
    """The HTTP API writes operator records from its own thread: never held by a step."""
    trail, sink = _trail(tmp_path)
    with trail.gathered():
        trail.record("decision", "the step's")
        other = threading.Thread(target=lambda: trail.record("operator", "the API's"))
        other.start()
        other.join()
        assert [r.summary for r in sink.records] == ["the API's"]
    assert [r.summary for r in sink.records] == ["the API's", "the step's"]


def test_a_step_that_fails_still_writes_what_it_gathered(tmp_path: Path) -> None:
    trail, sink = _trail(tmp_path)
    try:
        with trail.gathered():
            trail.record("decision", "before the failure")
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert [r.summary for r in sink.records] == ["before the failure"]
