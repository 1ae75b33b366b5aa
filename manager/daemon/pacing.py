"""When the next cycle runs (pure): one interval after the last one started, sooner while a
fresh instance is still reading its feeds, and just past the end of a dead broker's grace
period when that comes first, so a heal starts when the grace is over, not up to a whole
interval later."""

from __future__ import annotations

from manager.analyzer.health import next_grace_end_ms
from manager.model.snapshot import Snapshot

MIN_CYCLE_GAP_S = 0.5  # between two cycles, however soon a grace period ends


def next_cycle_at(
    started: float,
    interval_s: float,
    *,
    reading: bool,
    snap: Snapshot | None,
    now_monotonic: float,
    now_s: float,
) -> float:
    """The monotonic time of the next cycle, for a cycle that started at ``started``."""
    at = started + interval_s
    if reading:  # the first decision waits for the feeds: look again soon
        return min(at, started + MIN_CYCLE_GAP_S)
    end_ms = next_grace_end_ms(snap) if snap is not None else None
    if end_ms is None:
        return at
    # Just past the end, so that cycle's snapshot sees the grace over.
    wake = now_monotonic + (end_ms - now_s * 1000) / 1000 + 0.05
    return max(min(at, wake), now_monotonic + MIN_CYCLE_GAP_S)
