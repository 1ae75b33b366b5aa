"""How a reason names many things: the first few, then how many more. One rule for every gate
and goal, so an audit line never lists thousands of partitions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

MAX_EXAMPLES = 5

T = TypeVar("T")


def first(items: Sequence[T]) -> tuple[Sequence[T], int]:
    """The items a reason shows, and how many it leaves out."""
    return items[:MAX_EXAMPLES], max(0, len(items) - MAX_EXAMPLES)


def examples(items: Sequence[str], sep: str = ", ", more: str = " and {} more") -> str:
    """The items a reason shows joined by ``sep``, then ``more`` with the count left out (if
    any): "a, b, c, d, e and 7 more"."""
    shown, left = first(items)
    return sep.join(shown) + (more.format(left) if left else "")
