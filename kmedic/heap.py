"""glibc's malloc told to keep the memory it is given back, for reuse (process tuning).

By default glibc hands a freed block at the top of its heap back to the operating system once
128 kB are free there, and serves a block of more than 128 kB (a threshold that rises as big
blocks are freed) from a fresh mapping. A manager cycle and a readiness scenario at fleet size
allocate and free arrays of megabytes over and over, and each came back from the system as new
pages, each page a fault: a readiness scenario at 1.3 M replicas took about 10,000 page faults
and 0.02 s of system time, an eighth of its CPU (docs/readiness.md). Told to keep up to
512 MB free and to map only blocks over 32 MB, glibc reuses what it has; the peak resident
memory is the same (measured there: 801 and 805 MB).

The threads of a process share two arenas (glibc gives each new thread one of its own, up to
eight a core): what the readiness thread frees, the cycle reuses, instead of each keeping
its own freed memory apart.

Every kmedic process calls ``keep_freed_memory`` once, at start (composition.cli), before
it starts a thread. On a C
library without ``mallopt`` (musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

M_TRIM_THRESHOLD = -1  # glibc's malloc.h
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
ARENAS = 2  # glibc's default is eight a core
MB = 1 << 20
KEEP_FREE = 512 * MB  # free memory at the top of the heap kept, not handed back
MAP_ABOVE = 32 * MB  # blocks larger than this are mapped alone (glibc's own maximum)


def keep_freed_memory() -> bool:
    """Tell glibc to keep freed memory for reuse; False where it cannot be told."""
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
        bool(mallopt(M_ARENA_MAX, ARENAS))
        and bool(mallopt(M_MMAP_THRESHOLD, MAP_ABOVE))
        and bool(mallopt(M_TRIM_THRESHOLD, KEEP_FREE))
    )
