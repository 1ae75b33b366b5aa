"""What `kmedic actions tail` folds.

- Moves: a heal of thousands of partitions is one decision, its plan's periodic progress
  records and, for every move, a start and an end record. Each plan's first ``KEEP`` routine
  move records are printed; the rest are counted and said in one line before the next record
  that is printed (a plan's progress, a failure, a decision) or at the end. A failed move is
  always printed.
- Repeats: a decision (or would_act) the same as the one printed just before it, numbers
  aside (a wait's seconds left, a count), is one line and a count: a quiet day's noop every
  cycle was 2,900 lines at a 30 s cycle. The count is said before the next record printed or
  at the end: ``... the same 95 times more, the last at 2026-12-06T11:59:30Z``.

``--all`` or ``--json`` prints every record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from kmedic.log_fold import shape
from manager.audit.log import AuditRecord, render_line

KEEP = 10


def routine_move(record: AuditRecord) -> bool:
    """A move's start, progress or completion: the plan's progress records sum them up."""
    return record.summary.startswith("move of ") and record.kind != "action_failed"


@dataclass
class MoveFold:
    keep: int = KEEP
    compact: bool = False  # each reason by its code (--verbose: the whole sentence)
    shown: int = 0  # routine move records printed since the last plan started
    hidden: int = 0  # and not printed, not yet said

    def lines(self, record: AuditRecord) -> list[str]:
        """What to print for ``record``: nothing, its line, or the hidden count and its line."""
        if record.kind == "decision" and record.summary.startswith("act"):
            self.shown = 0  # a new plan: its first moves are shown again
        if routine_move(record):
            if self.shown >= self.keep:
                self.hidden += 1
                return []
            self.shown += 1
        return [*self.finish(), render_line(record, compact=self.compact)]

    def finish(self) -> list[str]:
        """The line that says how many move records were hidden, if any were."""
        if not self.hidden:
            return []
        said = (
            f"... {self.hidden} more move records (starts and ends) not shown; "
            "the plan's progress records sum them up, --all prints every one"
        )
        self.hidden = 0
        return [said]


REPEATED_KINDS = ("decision", "would_act")


@dataclass
class RepeatFold:
    """An unchanged decision printed once and counted after (see the module's words)."""

    last: tuple[str, str, tuple[str, ...]] | None = None  # the record printed last, as keyed
    held: int = 0
    held_until_ms: int = 0

    def lines(self, record: AuditRecord, render: Callable[[AuditRecord], list[str]]) -> list[str]:
        key = _key(record) if record.kind in REPEATED_KINDS else None
        if key is not None and key == self.last:
            self.held += 1
            self.held_until_ms = record.time_ms
            return []
        shown = render(record)
        out = [*self.finish(), *shown] if shown else []
        if shown:
            self.last = key
        return out

    def finish(self) -> list[str]:
        if not self.held:
            return []
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.held_until_ms / 1000))
        said = f"... the same {self.held} times more, the last at {when}"
        self.held = 0
        return [said]


def _key(record: AuditRecord) -> tuple[str, str, tuple[str, ...]]:
    return (record.kind, shape(record.summary), tuple(shape(r) for r in record.reasons))
