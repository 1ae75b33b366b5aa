"""What `kmedic actions tail` folds: a heal of thousands of partitions is one decision, its
plan's periodic progress records and, for every move, a start and an end record. Each plan's
first ``KEEP`` routine move records are printed; the rest are counted and said in one line
before the next record that is printed (a plan's progress, a failure, a decision) or at the
end. A failed move is always printed, and ``--all`` or ``--json`` prints every record."""

from __future__ import annotations

from dataclasses import dataclass

from manager.audit.log import AuditRecord, render_line

KEEP = 10


def routine_move(record: AuditRecord) -> bool:
    """A move's start, progress or completion: the plan's progress records sum them up."""
    return record.summary.startswith("move of ") and record.kind != "action_failed"


@dataclass
class MoveFold:
    keep: int = KEEP
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
        return [*self.finish(), render_line(record)]

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
