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

A one-shot command (``kmedic plan``, ``kmedic readiness``) keeps the snapshot it loads to
its end: it loads it with the collector paused and then freezes what is alive (gc.freeze),
so no later pass walks those millions of objects again. They are still freed by reference
counting; only a reference cycle among them would stay. Never in the daemon, whose
snapshots are replaced every cycle.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
def kept_to_the_end() -> Iterator[None]:
    """Build what a one-shot command keeps until it exits, then freeze it (see above)."""
    with collector_paused():
        yield
        gc.freeze()
