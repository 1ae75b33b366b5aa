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


def test_an_unchanged_decision_every_cycle_is_one_line_and_a_count() -> None:
    """Issue 72.6: an identical noop every cycle (2,900 lines a day at a 30 s cycle), and a
    wait whose seconds left change each cycle, are printed once and counted; a change prints."""
    from manager.cli.tail_fold import RepeatFold

    def at(r: AuditRecord, s: int, reasons: tuple[str, ...] = ()) -> AuditRecord:
        return r.model_copy(update={"time_ms": 1_765_000_000_000 + s * 1000, "reasons": reasons})

    day = [
        at(record("decision", "noop: every broker is alive and within its limits"), 30 * n)
        for n in range(96)
    ]
    day += [
        at(record("decision", f"wait: broker 4 has been dead {s} s of its 600 s grace"), 3000 + s)
        for s in (30, 60, 90)
    ]
    day.append(
        at(
            record("would_act", "would act (observe mode): heal dead brokers 4"),
            3700,
            ("heal_without_loads: the loads are 1200 s old",),
        )
    )
    day.append(
        at(
            record("would_act", "would act (observe mode): heal dead brokers 4"),
            3730,
            ("heal_without_loads: the loads are 1230 s old",),
        )
    )
    fold, repeats = MoveFold(compact=True), RepeatFold()
    lines = [line for r in day for line in repeats.lines(r, fold.lines)] + repeats.finish()
    assert len(lines) == 6, lines
    assert "noop: every broker is alive" in lines[0]
    assert lines[1] == "... the same 95 times more, the last at 2025-12-06T06:34:10Z"
    assert "dead 30 s of its 600 s grace" in lines[2]
    assert lines[3].startswith("... the same 2 times more")
    assert lines[4].endswith("because heal_without_loads")  # compact: the code alone
    assert lines[5].startswith("... the same 1 times more")


def test_verbose_reasons_are_whole_sentences() -> None:
    from manager.audit.log import render_line

    r = record("decision", "refuse: ...").model_copy(
        update={"reasons": ("too_many_dead_brokers: 2 of 4 brokers are dead", "mode: observe")}
    )
    assert render_line(r, compact=True).endswith("because too_many_dead_brokers; mode: observe")
    assert "2 of 4 brokers are dead" in render_line(r)


def test_the_tail_reads_an_old_leaders_late_record_in_its_place_and_a_follower_is_told(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The soak (seed 5150): a record an old leader sent within its lease to a hung broker
    reached the topic after the broker resumed; the tail puts it back by its epoch."""
    import manager.cli.actions as actions
    from composition.cli import main

    def made(epoch: int, s: int, summary: str) -> AuditRecord:
        return AuditRecord(
            cluster="demo", instance=f"m{epoch}", epoch=epoch, kind="decision",
            summary=summary, time_ms=1_765_000_000_000 + s * 1000,
        )  # fmt: skip

    topic = [made(5, 0, "noop: old"), made(6, 10, "wait: new"), made(5, 2, "noop: late")]

    def records(*_: object, **__: object) -> Iterator[AuditRecord]:
        yield from topic

    monkeypatch.setattr(actions, "read_records", records)
    where = ["actions", "tail", "--bootstrap", "127.0.0.1:1", "--all"]
    assert main(where) == 0
    out = capsys.readouterr().out
    assert out.index("noop: late") < out.index("wait: new"), out
    assert main([*where, "--follow"]) == 0
    said = capsys.readouterr()
    assert said.out.index("wait: new") < said.out.index("noop: late")
    assert "the next record is epoch 5's, arriving after epoch 6's" in said.err
