"""Python's cyclic garbage collector paused while the planner decides, and while a cycle
reads the cluster and builds its snapshot.

A decision over a large cluster builds an index of millions of lists, tuples and dicts, and
every few thousand of those allocations the collector wakes and walks the young objects; at
270 brokers / 1.3 M replicas those walks cost about a fifth of the decision, and find nothing:
the planner's objects are freed by reference counting when the decision is returned. So the
collector is paused for the call and restored after, exactly as it was, even when the call
raises; a reference cycle some library might leave meanwhile waits for its next pass.

The same holds for the observation: the Admin API's answers (kafka-python decodes them on its
own thread, and the pause is process-wide) and the snapshot built from them. At that size
the pause halves the read and the build (docs/bench.md, "cycle").

An agent's sample is the same at its scale: a broker's exporter page and record are tens of
thousands of small objects; the collector is paused while it samples and publishes.

A one-shot command (``kmedic plan``, ``kmedic readiness``) keeps the snapshot it loads to
its end: it loads it with the collector paused and then freezes what is alive (gc.freeze)
until it is done, so no pass walks those millions of objects again meanwhile. Never in the
daemon, whose snapshots are replaced every cycle.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def kept_frozen(load: Callable[[], T]) -> Iterator[T]:
    """What a one-shot command loads and keeps (see above): loaded with the collector paused,
    frozen for the block, and unfrozen after it, so that a command a test runs in-process
    leaves nothing frozen."""
    with collector_paused():
        kept = load()
        gc.freeze()
    try:
        yield kept
    finally:
        gc.unfreeze()
