"""How far a running plan is (pure): bytes copied of the total, the copy rate, the time left.

- A move's total is its partition's size (``Move.size_bytes``, from the snapshot it was planned
  on) times the replicas it adds. Until it starts, the executor does not know which replicas it
  adds, so a pending move counts one (a heal, a drain or a rebalance adds one per partition);
  its figure becomes exact when it starts.
- A running move's copied bytes are the progress watchdog's latest sample of each new replica
  (manager.model.move_progress), capped at the partition's size: the log grows while it moves.
- A completed move counts in full; a failed or cancelled one counts in neither figure (its
  partition is replanned: a new move).
- The rate is the copied bytes' growth over the last ``window_s`` (30 s) of samples, unknown
  until they span a minimum (two of the watchdog's samples); the time left is what remains at
  that rate, unknown (None) until the rate is known and above zero.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kmedic.errors import KmedicError

FIELD = "plan_progress"
WINDOW_S = 30.0


@dataclass(frozen=True)
class MoveFigures:
    """One move as progress counts it."""

    size_bytes: int
    adding: int  # replicas it adds (1 until it starts: unknown before)
    status: str  # pending, in_flight, completed, failed, cancelled
    copied: Mapping[int, int] | None = None  # broker -> bytes, from the watchdog


def move_bytes(move: MoveFigures) -> tuple[int, int]:
    """(copied, total) bytes of one move; (0, 0) for one that failed or was cancelled."""
    if move.status in ("failed", "cancelled"):
        return 0, 0
    total = move.size_bytes * move.adding
    if move.status == "completed":
        return total, total
    copied = sum(min(n, move.size_bytes) for n in (move.copied or {}).values())
    return min(copied, total), total


@dataclass(frozen=True)
class PlanProgress:
    """A running plan's figures at one moment."""

    copied_bytes: int
    total_bytes: int
    moves_done: int
    moves_total: int
    moves_failed: int = 0
    rate_bytes_per_s: float | None = None
    eta_s: float | None = None

    @property
    def fraction(self) -> float:
        return self.copied_bytes / self.total_bytes if self.total_bytes else 1.0

    def sentence(self) -> str:
        """The line on-call reads: '1.2 GB of 3.4 GB copied (35 %), 12 of 40 moves done,
        48.0 MB/s, about 46 s left'."""
        parts = [
            f"{_bytes(self.copied_bytes)} of {_bytes(self.total_bytes)} copied "
            f"({self.fraction:.0%})",
            f"{self.moves_done} of {self.moves_total} moves done",
        ]
        if self.moves_failed:
            parts.append(f"{self.moves_failed} failed")
        if self.rate_bytes_per_s is not None:
            parts.append(f"{_bytes(self.rate_bytes_per_s)}/s")
        parts.append(f"about {duration(self.eta_s)} left" if self.eta_s is not None else "no ETA")
        return ", ".join(parts)

    def done_sentence(self, elapsed_s: float) -> str:
        """The line for a plan that ended: 'in 61 s: 2 of 2 moves done, 3.0 GB'. No average
        rate: a plan adopted after a failover counts bytes its predecessor copied."""
        failed = f", {self.moves_failed} failed" if self.moves_failed else ""
        return (
            f"in {duration(elapsed_s)}: {self.moves_done} of {self.moves_total} moves done"
            f"{failed}, {_bytes(self.copied_bytes)}"
        )

    def to_field(self) -> dict[str, Any]:
        return {
            "copied_bytes": self.copied_bytes,
            "total_bytes": self.total_bytes,
            "moves_done": self.moves_done,
            "moves_total": self.moves_total,
            "moves_failed": self.moves_failed,
            "rate_bytes_per_s": self.rate_bytes_per_s,
            "eta_s": self.eta_s,
        }

    @staticmethod
    def from_field(raw: Any) -> PlanProgress:
        """Read back (from the stored plan); an error naming the problem when malformed."""
        try:
            rate, eta = raw.get("rate_bytes_per_s"), raw.get("eta_s")
            found = PlanProgress(
                copied_bytes=int(raw["copied_bytes"]),
                total_bytes=int(raw["total_bytes"]),
                moves_done=int(raw["moves_done"]),
                moves_total=int(raw["moves_total"]),
                moves_failed=int(raw.get("moves_failed", 0)),
                rate_bytes_per_s=None if rate is None else float(rate),
                eta_s=None if eta is None else float(eta),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise KmedicError(f"stored plan progress {raw!r} is malformed: {exc!r}") from exc
        counts = (found.copied_bytes, found.total_bytes, found.moves_done, found.moves_total)
        if min(counts) < 0 or found.copied_bytes > found.total_bytes:
            raise KmedicError(f"stored plan progress {raw!r} has impossible figures")
        return found


def measure(moves: Iterable[MoveFigures], rate_bytes_per_s: float | None = None) -> PlanProgress:
    """The plan's figures from its moves, with the time left at ``rate_bytes_per_s``."""
    copied = total = done = counted = failed = 0
    for move in moves:
        c, t = move_bytes(move)
        copied, total = copied + c, total + t
        if move.status in ("failed", "cancelled"):
            failed += 1
            continue
        counted += 1
        done += move.status == "completed"
    eta = None
    if rate_bytes_per_s is not None and rate_bytes_per_s > 0:
        eta = (total - copied) / rate_bytes_per_s
    elif copied == total:
        eta = 0.0
    return PlanProgress(copied, total, done, counted, failed, rate_bytes_per_s, eta)


class CopyRate:
    """The copied bytes' growth per second over the last ``window_s`` of samples; unknown until
    the samples span ``min_span_s`` (the bytes come from the watchdog's samples, every
    ``progress_sample_s``: a shorter span may see none and call a running copy idle)."""

    def __init__(self, window_s: float = WINDOW_S, min_span_s: float = 0.0) -> None:
        self.window_s = window_s
        self.min_span_s = min_span_s
        self._samples: deque[tuple[float, int]] = deque()

    def add(self, now_s: float, copied_bytes: int) -> None:
        self._samples.append((now_s, copied_bytes))
        while len(self._samples) > 2 and now_s - self._samples[1][0] >= self.window_s:
            self._samples.popleft()

    def rate(self) -> float | None:
        """Bytes per second, or None before two samples a moment apart."""
        if len(self._samples) < 2:
            return None
        (t0, b0), (t1, b1) = self._samples[0], self._samples[-1]
        if t1 - t0 <= 0 or t1 - t0 < self.min_span_s:
            return None
        return max(b1 - b0, 0) / (t1 - t0)


def _bytes(n: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def duration(s: float) -> str:
    """'45 s', '12 min', '3.4 h'."""
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
