"""glibc's malloc told to keep the memory it is given back, for reuse (process tuning).

By default glibc hands a freed block at the top of its heap back to the operating system once
128 kB are free there, and serves a block of more than 128 kB (a threshold that rises as big
blocks are freed) from a fresh mapping. A manager cycle and a readiness scenario at fleet size
allocate and free arrays of megabytes over and over, and each came back from the system as new
pages, each page a fault: a readiness scenario at 1.3 M replicas took about 10,000 page faults
and 0.02 s of system time, an eighth of its CPU (docs/readiness.md). Told to keep up to
512 MB free and to map only blocks over 32 MB, glibc reuses what it has; the peak resident
memory is the same (measured there: 801 and 805 MB).

The threads of a process share one arena (glibc gives each new thread one of its own, up to
eight a core): what the readiness thread frees, the cycle reuses, instead of each arena
keeping its own freed memory apart, its high-water mark added to the others'. A Python
thread allocates holding the interpreter lock, so one arena makes none of them wait. The
manager at fleet scale: 714 MB at its peak with one arena, 779 MB with two (docs/bench.md).

Every kmedic process calls ``keep_freed_memory`` once, at start (composition.cli), before
it starts a thread. On a C
library without ``mallopt`` (musl) it does nothing.

The manager's feed process (manager.monitor.feed_process) is the opposite case: it holds
little (the feeds' columns, about 50 MB at fleet scale) and decodes bursts of records of up
to a megabyte each, in two threads beside the Kafka client's. Under glibc's defaults the
first such block freed raises the mapping threshold to its size, every later one is carved
from a heap that small blocks pin, and the process keeps its burst's high-water mark (320 MB
at fleet scale). ``hand_back_freed_memory`` keeps the threshold where it starts, 128 kB, so
a big block is mapped alone and unmapped when freed: 270 MB at the same feeds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
ARENAS = 1  # glibc's default is eight a core
FEED_ARENAS = 2  # the feed process: the Kafka client's threads allocate outside the GIL
MB = 1 << 20
KEEP_FREE = 512 * MB  # free memory at the top of the heap kept, not handed back
MAP_ABOVE = 32 * MB  # blocks larger than this are mapped alone (glibc's own maximum)
HAND_BACK_ABOVE = 128 << 10  # glibc's starting threshold, held there


def keep_freed_memory() -> bool:
    """Tell glibc to keep freed memory for reuse; False where it cannot be told."""
    return _tell_malloc(ARENAS, MAP_ABOVE, KEEP_FREE)


def hand_back_freed_memory() -> bool:
    """Tell glibc to map every block over 128 kB alone and trim its heaps' tops at 128 kB,
    whatever has been freed before; False where it cannot be told."""
    return _tell_malloc(FEED_ARENAS, HAND_BACK_ABOVE, HAND_BACK_ABOVE)


def _tell_malloc(arenas: int, map_above: int, keep_free: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return False
    mallopt = getattr(libc, "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return (
        bool(mallopt(M_ARENA_MAX, arenas))
        and bool(mallopt(M_MMAP_THRESHOLD, map_above))
        and bool(mallopt(M_TRIM_THRESHOLD, keep_free))
    )
