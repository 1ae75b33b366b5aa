"""The progress watchdog's arithmetic (pure): is a running move still copying bytes?

A move is judged by its adding replicas (the brokers gaining the partition), never by how long
it has run: a large move that copies slowly but surely is never cut off, a destination that
stalls (a hung disk, a stopped JVM) is noticed within ``stall_ms``.

- Each sample gives the bytes each adding replica holds (its log-dir size), or None for a
  broker that did not answer. A move *advanced* when some adding replica holds more bytes than
  it ever did before; ``advanced_ms`` is the last time it did (the start, until then).
- No advance for ``stall_ms``: *stalled* (reported). For twice that: *cancel*.
- A broker that does not answer never advances: a stopped JVM is a stall, not an unknown.
  A sample kmedic could not take (it could not ask: a refusal, no client) restarts the clock
  instead: the watchdog never cancels a move on what it cannot see.
- The record is stored with the in-flight plan, so a new leader keeps the clock: a sample
  above the stored bytes is an advance at that moment; one equal to them means no advance
  since the stored ``advanced_ms``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kmedic.errors import KmedicError

Verdict = Literal["moving", "stalled", "cancel"]
FIELD = "progress"


@dataclass(frozen=True)
class MoveProgress:
    """What the watchdog knows of one move."""

    advanced_ms: int  # when some adding replica last grew (the start, until one did)
    copied: Mapping[int, int] = field(default_factory=dict)  # broker -> most bytes seen

    @property
    def copied_bytes(self) -> int:
        return sum(self.copied.values())

    def to_field(self) -> dict[str, Any]:
        return {
            "advanced_ms": self.advanced_ms,
            "copied": {str(b): n for b, n in self.copied.items()},
        }

    @staticmethod
    def from_field(raw: Any) -> MoveProgress:
        """Read back from the stored plan; an error naming the problem when malformed."""
        try:
            copied = {int(b): int(n) for b, n in dict(raw.get("copied", {})).items()}
            advanced = int(raw["advanced_ms"])
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise KmedicError(f"stored move progress {raw!r} is malformed: {exc!r}") from exc
        if advanced < 0 or any(n < 0 for n in copied.values()):
            raise KmedicError(f"stored move progress {raw!r} has a negative figure")
        return MoveProgress(advanced, copied)


def observe(
    progress: MoveProgress | None, sample: Mapping[int, int | None], now_ms: int
) -> MoveProgress:
    """The record after one sample; the first one (``progress`` None) starts the clock."""
    if progress is None:
        seen = {b: n for b, n in sample.items() if n is not None}
        return MoveProgress(now_ms, seen)
    copied = dict(progress.copied)
    grew = False
    for broker, size in sample.items():
        if size is not None and size > copied.get(broker, -1):
            grew = grew or broker in copied
            copied[broker] = size
    # A broker's first answer is a baseline, not an advance: its bytes may be days old.
    return MoveProgress(now_ms if grew else progress.advanced_ms, copied)


def unseen(progress: MoveProgress | None, now_ms: int) -> MoveProgress:
    """The record after a sample kmedic could not take: the clock restarts, the bytes stay."""
    return MoveProgress(now_ms, progress.copied if progress is not None else {})


def verdict(progress: MoveProgress, now_ms: int, stall_ms: int) -> Verdict:
    idle = now_ms - progress.advanced_ms
    if idle >= 2 * stall_ms:
        return "cancel"
    if idle >= stall_ms:
        return "stalled"
    return "moving"


def stalled_brokers(progress: MoveProgress, adding: tuple[int, ...]) -> tuple[int, ...]:
    """The adding replicas to blame: those holding fewer bytes than the most advanced one (it
    caught up and waits for them), or all of them when none is ahead."""
    sizes = {b: progress.copied.get(b, 0) for b in adding}
    top = max(sizes.values(), default=0)
    behind = tuple(b for b in adding if sizes[b] < top)
    return behind or tuple(adding)
