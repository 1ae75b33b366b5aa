"""`kmedic actions tail` folds a big plan's move records (manager/cli/tail_fold.py): the first
KEEP of each plan printed, the rest counted in one line before the next printed record; a
failure always printed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from manager.audit.log import AuditRecord
from manager.cli.tail_fold import MoveFold


def record(kind: str, summary: str) -> AuditRecord:
    return AuditRecord(cluster="c", instance="m1", epoch=1, kind=kind, summary=summary)


def heal(moves: int) -> list[AuditRecord]:
    out = [record("decision", f"act (heal): heal dead brokers 3: {moves} partitions reassigned")]
    for n in range(moves):
        out.append(record("action_started", f"move of t:{n} [3, 1] -> [2, 1] started"))
        out.append(record("action_completed", f"move of t:{n} [3, 1] -> [2, 1] completed"))
    out.append(record("action_progress", f"plan done in 90 s: {moves} of {moves} moves done"))
    return out


def printed(fold: MoveFold, records: list[AuditRecord]) -> list[str]:
    lines = [line for r in records for line in fold.lines(r)]
    return lines + fold.finish()


def test_a_heal_of_thousands_of_partitions_prints_a_few_lines() -> None:
    lines = printed(MoveFold(keep=10), heal(4758))
    assert len(lines) == 1 + 10 + 1 + 1
    assert "heal dead brokers 3" in lines[0]
    assert lines[-2].startswith("... 9506 more move records (starts and ends) not shown")
    assert "plan done in 90 s" in lines[-1]


def test_each_plan_shows_its_first_moves_and_a_failure_is_always_shown() -> None:
    failed = record("action_failed", "move of t:7 [3, 1] -> [2, 1] failed: broker 2 stalled")
    records = [*heal(20)[:-1], failed, *heal(2)]
    lines = printed(MoveFold(keep=4), records)
    assert sum("move of" in line and "failed" in line for line in lines) == 1
    assert any(line.startswith("... 36 more move records") for line in lines)
    assert (
        sum(" started" in line for line in lines) == 2 + 2
    )  # 4 records of the first plan, all of 2
    assert lines.index(next(x for x in lines if x.startswith("..."))) < lines.index(
        next(x for x in lines if "failed" in x)
    )


def test_small_plans_are_printed_whole() -> None:
    lines = printed(MoveFold(keep=10), heal(5))
    assert len(lines) == 1 + 10 + 1 and not any(line.startswith("...") for line in lines)


def test_a_cluster_the_topic_has_no_record_of_is_named_as_a_typo(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 72.2: `kmedic actions tail --cluster deom` printed nothing and exited 0."""
    import manager.cli.actions as actions
    from composition.cli import main

    def records(*_: object, **__: object) -> Iterator[AuditRecord]:
        yield AuditRecord(cluster="demo", instance="m1", epoch=1, kind="decision", summary="noop")

    monkeypatch.setattr(actions, "read_records", records)
    where = ["actions", "tail", "--bootstrap", "127.0.0.1:1"]
    assert main([*where, "--cluster", "deom", "--since", "1h"]) == 1
    err = capsys.readouterr().err
    assert (
        "no record of cluster 'deom' in kmedic.actions since 1h; its records are about: demo" in err
    )
    assert main([*where, "--cluster", "demo"]) == 0
    assert "noop" in capsys.readouterr().out
