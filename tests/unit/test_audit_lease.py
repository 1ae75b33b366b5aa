"""A leader's audit records are written within its lease (manager.audit.log,
manager.coordination.lease): bounded by what it has left, withheld once it has run out, the
spool replayed only within one. Found by the brokers' request logs: a cut-off leader's record
reached the audit topic 1.0 and 2.3 s after its session expired, after its successor's."""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog
from manager_fakes import MemorySink, Rig
from structlog.testing import LogCapture

import manager.audit.log as audit_log
from manager.audit.log import AuditLog, AuditRecord
from manager.daemon.audit_trail import AuditTrail
from manager.web.metrics import ManagerMetrics


class TimedSink(MemorySink):
    """Keeps each send's bound; takes nothing while down."""

    def __init__(self) -> None:
        super().__init__()
        self.bounds: list[float] = []
        self.up = True

    def send(self, records: list[AuditRecord], timeout_s: float) -> int:
        self.bounds.append(timeout_s)
        return super().send(records, timeout_s) if self.up else 0


def rec(n: int) -> AuditRecord:
    return AuditRecord(cluster="c", instance="m1", epoch=3, kind="decision", summary=f"r{n}")


def test_a_send_waits_no_longer_than_the_lease_has_left(tmp_path: Path) -> None:
    sink, secondary = TimedSink(), TimedSink()
    log = AuditLog(sink, tmp_path, secondary=secondary, write_timeout_s=5.0)
    log.write_all([rec(1)], within_s=0.4)
    assert sink.bounds and max(sink.bounds) <= 0.4  # 5.0, the write timeout, before the lease
    sink.up = secondary.up = False
    [stored] = log.write_all([rec(2)], within_s=0.4)
    assert stored.sink == "spool"
    assert secondary.bounds and max(secondary.bounds) <= 0.4
    log.write_all([rec(3)], within_s=None)  # no lease: the write timeout, as ever
    assert sink.bounds[-1] == 5.0 or secondary.bounds[-1] == 5.0


def test_records_made_once_the_lease_has_run_out_are_spooled_never_sent_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the soak: a move started within the lease was told just after it; withheld,
    its start was never audited and its successor's end looked told twice. Spooled, it is
    told later, tagged with its epoch, when the instance may write again."""
    sink, secondary = TimedSink(), TimedSink()
    log = AuditLog(sink, tmp_path, secondary=secondary)
    # The module's own logger replaced, not structlog's global configuration: a logger another
    # test in this process used first is cached and would not see a capture configured later.
    capture = LogCapture()
    monkeypatch.setattr(audit_log, "log", structlog.wrap_logger(None, processors=[capture]))
    stored = log.write_all([rec(1), rec(2)], within_s=0.0)
    lines = capture.entries
    assert [r.sink for r in stored] == ["spool", "spool"]
    assert sink.bounds == [] and secondary.bounds == []  # nothing sent, anywhere
    assert log.spool.pending() == 2
    assert [line["event"] for line in lines] == ["audit_spooled_past_lease"] + 2 * [
        "audit_failover"
    ]
    assert log.replay(force=True, within_s=None) == 2  # a connected standby, later
    assert [r.summary for r in sink.records] == ["r1", "r2"]


def test_the_spool_is_replayed_only_within_a_lease(tmp_path: Path) -> None:
    sink = TimedSink()
    log = AuditLog(sink, tmp_path, retry_interval_s=0.0)
    sink.up = False
    log.write_all([rec(1)], within_s=3.0)
    assert log.on_failover
    sink.up = True
    assert log.replay(within_s=0.0) == 0 and log.on_failover  # not leading: it waits
    # A standby's record (an operator's, through the API) waits behind the spool.
    [standby] = log.write_all([rec(2)], replay=False)
    assert standby.sink == "spool" and sink.records == []
    assert log.replay(within_s=2.0) == 2
    assert [r.summary for r in sink.records] == ["r1", "r2"]


def test_the_trail_asks_the_lease_for_every_record_but_an_operators(tmp_path: Path) -> None:
    sink = TimedSink()
    lease = [2.0]
    trail = AuditTrail(
        AuditLog(sink, tmp_path),
        ManagerMetrics("c"),
        cluster="c",
        instance="m1",
        epoch=lambda: 3,
        lease=lambda: lease[0],
    )
    trail.record("decision", "within")
    assert sink.bounds[-1] <= 2.0
    lease[0] = 0.0
    trail.record("decision", "after the lease")
    trail.operator("alice: drain broker 3", {"by": "alice"})
    # Past the lease the leader's record is spooled, and the operator's (a standby's now)
    # waits behind it.
    assert [r.summary for r in sink.records] == ["within"]
    assert [r.sink for r in trail.recent_records()] == ["primary", "spool", "spool"]


def test_a_leader_whose_lease_ran_out_decides_nothing_and_audits_nothing(
    tmp_path: Path,
) -> None:
    """Still connected as far as kazoo knows (a silent drop): the cycle is blind."""
    rig = Rig(tmp_path)
    rig.sources.dead = {4}
    rig.coordinator.lease_s = 0.0
    outcome = rig.manager.cycle()
    assert outcome.kind == "blind", outcome.sentence
    assert rig.sink.records == [] and rig.executor.submitted == []


def test_a_standby_replays_its_spool_a_leader_without_its_lease_does_not(tmp_path: Path) -> None:
    """A leader that spooled records during an audit-topic outage and then lost leadership (a
    kill, a cut) replays them once it is a connected standby, which knows it leads nothing
    (the soak's end state: every spool empty); never while it cannot tell."""
    rig = Rig(tmp_path)
    rig.manager.audit.retry_interval_s = 0.0
    rig.manager.audit.spool.append(rec(1).to_json())
    rig.coordinator.lease_s = 0.0  # leading, its lease run out: it cannot tell
    rig.manager.cycle()
    assert rig.manager.audit.on_failover and rig.sink.records == []
    rig.coordinator.connected = False  # nor while cut off
    rig.coordinator.is_leader = False
    rig.manager.cycle()
    assert rig.manager.audit.on_failover
    rig.coordinator.connected = True  # back, a standby
    rig.manager.cycle()
    assert not rig.manager.audit.on_failover
    assert [r.summary for r in rig.sink.records] == ["r1"]
