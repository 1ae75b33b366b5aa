"""Threads whose name the operating system knows too: ``top -H -p PID`` and ``ps -L`` show
which of a role's threads spends the CPU (``feed-kmedic.bro``, ``readiness``) instead of a row
of ``python`` (Python before 3.14 names its threads for itself only). Linux keeps 15 bytes of
a name; elsewhere, and when the call fails, the thread runs unnamed."""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
from collections.abc import Callable

_PR_SET_NAME = 15
_LIBC = (
    ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform == "linux" else None
)


def name_this_thread(name: str) -> None:
    """Give the calling thread ``name`` (its first 15 bytes) in the operating system."""
    if _LIBC is None:
        return
    _LIBC.prctl(_PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def named_thread(target: Callable[[], None], name: str, *, daemon: bool = True) -> threading.Thread:
    """A thread named ``name`` in Python and in the operating system."""

    def run() -> None:
        name_this_thread(name)
        target()

    return threading.Thread(target=run, name=name, daemon=daemon)
