"""The hourly move budget's memory: when moves started, kept inside the stored plan.

The plan znode is written in a fenced compare-and-set transaction
(manager.coordination.leadership), so the history travels with it: a new leader adopts the
moves its predecessor started in the last hour along with the plan, and a failover never
resets the budget. Entries are
``[wall-clock seconds, moves started]``; the plan document is never deleted, only emptied,
so the history outlives the plan that wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

WINDOW_S = 3600.0
FIELD = "moves_started"

Entry = tuple[float, int]


def from_plan(plan: Mapping[str, Any]) -> list[Entry]:
    """The history a stored plan's JSON document carries (``from_field`` of its field)."""
    return from_field(plan.get(FIELD))


def from_field(raw: Any) -> list[Entry]:
    """The history as stored; entries that are not ``[seconds, count]`` are dropped (they
    cannot be counted, and a plan written by hand must not block the daemon)."""
    out: list[Entry] = []
    for item in raw if isinstance(raw, list | tuple) else []:
        if (
            isinstance(item, list | tuple)
            and len(item) == 2
            and isinstance(item[0], int | float)
            and not isinstance(item[0], bool)
            and isinstance(item[1], int)
            and not isinstance(item[1], bool)
            and item[1] >= 0
        ):
            out.append((float(item[0]), int(item[1])))
    return out


def recent(entries: Iterable[Entry], now_s: float) -> list[Entry]:
    """Entries inside the window ending now (a clock step backwards keeps an entry)."""
    return [(t, n) for t, n in entries if now_s - t <= WINDOW_S]


def moves_in_window(entries: Iterable[Entry], now_s: float) -> int:
    return sum(n for _, n in recent(entries, now_s))


def with_started(entries: Iterable[Entry], now_s: float, count: int) -> list[Entry]:
    """The history after ``count`` moves start now, older entries pruned."""
    return [*recent(entries, now_s), (now_s, count)]


def to_field(entries: Iterable[Entry]) -> list[list[float | int]]:
    return [[round(t, 3), n] for t, n in entries]
