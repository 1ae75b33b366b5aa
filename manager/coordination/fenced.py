"""What the stores need of the coordinator, and nothing more: its identity, the fencing
epoch it holds, a read, and writes fenced by that epoch. ``leadership.Coordinator`` is the
one implementation; the stores are typed against this protocol, so they never import it (a
layer contract in ``.importlinter`` keeps it so)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from kmedic.errors import KmedicError


class FencedError(KmedicError):
    """A write was rejected because a newer leader (higher epoch) exists."""


class FencedSession(Protocol):
    instance_id: str

    @property
    def epoch(self) -> int:
        """The fencing epoch this instance holds (or last held)."""

    def get_json(self, path: str) -> tuple[dict[str, Any], Any] | None:
        """A znode's JSON object and its stat, or None when the znode does not exist."""

    def fenced_commit(self, add_op: Callable[[Any], Any], what: str) -> list[Any]:
        """``add_op``'s writes in one transaction that checks the epoch has not moved:
        ``[epoch check, add_op's results...]``; FencedError for a stale leader."""
