"""The audit spool and the failover ordering of the audit log, on real files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kmedic.errors import KmedicError
from manager.audit.log import AuditLog, AuditRecord, render_line
from manager.audit.since import parse_since
from manager.audit.spool import Spool


def rec(n: int, **extra: object) -> AuditRecord:
    return AuditRecord(
        cluster="c1", instance="m-1", epoch=3, kind="decision", summary=f"record {n}", **extra
    )


class ListSink:
    """An audit sink kept in memory that can be switched off (a stand-in for a topic)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.up = True
        self.records: list[AuditRecord] = []
        self.capacity: int | None = None  # accept only this many, then fail (partial batch)

    def send(self, records: list[AuditRecord], timeout_s: float) -> int:
        if not self.up:
            return 0
        take = records if self.capacity is None else records[: self.capacity]
        self.records.extend(take)
        return len(take)

    def close(self) -> None:
        pass


def test_spool_appends_peeks_commits_and_empties(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    for i in range(3):
        spool.append(f'{{"n": {i}}}'.encode())
    assert spool.pending() == 3
    batch = spool.peek(2)
    assert [raw for _, raw in batch] == [b'{"n": 0}', b'{"n": 1}']
    spool.commit(batch[0][0])
    assert spool.pending() == 2
    spool.close()

    reopened = Spool(tmp_path)  # the cursor survives a restart
    assert reopened.pending() == 2
    assert [raw for _, raw in reopened.peek(10)] == [b'{"n": 1}', b'{"n": 2}']
    reopened.commit(reopened.peek(10)[-1][0])
    assert reopened.pending() == 0
    assert reopened.path.stat().st_size == 0
    reopened.append(b'{"n": 3}')
    assert [raw for _, raw in reopened.peek(10)] == [b'{"n": 3}']


def test_torn_tail_is_cut_and_the_rest_kept(tmp_path: Path) -> None:
    (tmp_path / "audit-spool.jsonl").write_bytes(b'{"n": 0}\n{"n": 1}\n{"n": 2')
    spool = Spool(tmp_path)
    assert spool.pending() == 2
    spool.append(b'{"n": 9}')
    assert [raw for _, raw in spool.peek(10)] == [b'{"n": 0}', b'{"n": 1}', b'{"n": 9}']


def test_a_corrupt_cursor_is_named(tmp_path: Path) -> None:
    (tmp_path / "audit-spool.cursor").write_text("banana")
    with pytest.raises(KmedicError, match=r"audit-spool\.cursor holds 'banana'"):
        Spool(tmp_path)


def test_unreadable_spooled_lines_are_quarantined_not_replayed(tmp_path: Path) -> None:
    primary = ListSink("primary")
    log = AuditLog(primary, tmp_path, retry_interval_s=0)
    log.spool.append(b"garbage")
    log.spool.append(rec(1).to_json())
    assert log.replay(force=True) == 1
    assert [r.summary for r in primary.records] == ["record 1"]
    assert (tmp_path / "audit-spool.rejected").read_bytes() == b"garbage\n"


def test_failover_goes_to_secondary_and_spool_and_replays_in_order(tmp_path: Path) -> None:
    primary, secondary = ListSink("primary"), ListSink("secondary")
    log = AuditLog(primary, tmp_path, secondary=secondary, retry_interval_s=0)
    assert log.write(rec(0)).sink == "primary"
    primary.up = False
    stored = log.write(rec(1))
    assert stored.sink == "secondary" and log.on_failover
    secondary.up = False
    assert log.write(rec(2)).sink == "spool"
    primary.up = True
    assert log.write(rec(3)).sink == "primary"
    assert [r.summary for r in primary.records] == [f"record {i}" for i in range(4)]
    assert [r.sink for r in primary.records] == ["primary", "secondary", "spool", "primary"]
    assert not log.on_failover


def test_a_batch_the_primary_takes_in_part_fails_over_from_there_in_order(
    tmp_path: Path,
) -> None:
    primary = ListSink("primary")
    log = AuditLog(primary, tmp_path, retry_interval_s=0)
    primary.capacity = 2
    stored = log.write_all([rec(n) for n in range(4)])
    assert [r.sink for r in stored] == ["primary", "primary", "spool", "spool"]
    assert log.counts["primary"] == 2 and log.counts["spool"] == 2
    primary.capacity = None
    log.replay(force=True)
    assert [r.summary for r in primary.records] == [f"record {n}" for n in range(4)]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(0, 3) | st.none(), st.integers(1, 4)), max_size=25
    )
)
def test_nothing_lost_nothing_reordered(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[bool, int | None, int]]
) -> None:
    """Records written one at a time or in batches, the primary up, down or taking part."""
    primary = ListSink("primary")
    log = AuditLog(primary, tmp_path_factory.mktemp("spool"), retry_interval_s=0)
    written: list[str] = []
    for n, (up, capacity, batch) in enumerate(steps):
        primary.up, primary.capacity = up, capacity
        records = [rec(n * 10 + i) for i in range(batch)]
        stored = log.write(records[0]) if batch == 1 else log.write_all(records)[0]
        written.extend(r.id for r in records)
        assert stored.id == records[0].id
    primary.up, primary.capacity = True, None
    log.replay(force=True)
    seen: list[str] = []
    for r in primary.records:
        if r.id not in seen:
            seen.append(r.id)
    assert seen == written
    assert not log.on_failover


def test_render_line_is_one_readable_line() -> None:
    record = rec(
        7,
        time_ms=1_700_000_000_123,
        reasons=("broker 2 dead for 10m", "3 partitions under-replicated"),
        partitions=tuple(f"t:{p}" for p in range(7)),
        sink="spool",
    )
    line = render_line(record)
    assert "\n" not in line
    assert line.startswith("2023-11-14T22:13:20.123Z  decision")
    assert "c1 m-1 e3  record 7  because broker 2 dead for 10m; 3 partitions" in line
    assert "partitions t:0, t:1, t:2, t:3, t:4 (+2 more)  [via spool]" in line
    assert AuditRecord.from_json(record.to_json()) == record


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("15m", 1_000_000_000 - 900_000),
        ("2h", 1_000_000_000 - 7_200_000),
        ("1970-01-12T13:46:40Z", 1_000_000_000),
        ("1970-01-12T13:46:40", 1_000_000_000),
        ("1970-01-12T14:46:40+01:00", 1_000_000_000),
    ],
)
def test_since_accepts_durations_and_iso_times(text: str, expected: int) -> None:
    assert parse_since(text, now_ms=1_000_000_000) == expected


def test_since_names_a_bad_value() -> None:
    with pytest.raises(KmedicError, match="--since 'yesterday': use a duration like 15m"):
        parse_since("yesterday", now_ms=0)
