"""kmedic.heap: glibc keeps freed memory for reuse, so arrays of megabytes allocated and freed
over and over (a cycle's, a readiness scenario's) cost no page faults once the first are in."""

from __future__ import annotations

import platform
import subprocess
import sys
import textwrap

import pytest

from kmedic.heap import keep_freed_memory

REPEATED = textwrap.dedent(
    """
    import resource, sys
    from kmedic.heap import keep_freed_memory
    if sys.argv[1] == "tuned":
        assert keep_freed_memory()
    import numpy as np
    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    def arrays():  # megabytes, as a cycle's arrays come and go
        for size in (3, 5, 9, 4, 7):
            a = np.ones(size << 17)
            del a
    arrays()
    before = faults()
    for _ in range(20):
        arrays()
    print(faults() - before)
    """
)

needs_glibc = pytest.mark.skipif(
    platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's; this C library has none"
)


def _printed(script: str, arg: str) -> int:
    """The number ``script`` prints, run in a fresh interpreter with ``arg``."""
    done = subprocess.run(
        [sys.executable, "-c", script, arg], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def _faults(mode: str) -> int:
    return _printed(REPEATED, mode)


@needs_glibc
def test_glibc_takes_the_setting() -> None:
    assert keep_freed_memory()


@needs_glibc
def test_arrays_freed_and_allocated_again_cost_no_page_faults() -> None:
    assert _faults("default") > 100  # glibc as it starts: handed back, faulted in again
    assert _faults("tuned") < 10


BURST = textwrap.dedent(
    """
    import sys
    from kmedic.heap import hand_back_freed_memory
    def rss_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    if sys.argv[1] == "hand back":
        assert hand_back_freed_memory()
    first = bytearray(1 << 20)  # a record of a megabyte, decoded and dropped
    del first
    before = rss_mb()
    pinned, burst = [], []
    for _ in range(200):  # a burst of records, each leaving a small block behind it
        burst.append(bytearray(900_000))
        pinned.append(bytearray(1_000))
    del burst
    print(round(rss_mb() - before))
    """
)


def _kept_after_burst_mb(mode: str) -> int:
    return _printed(BURST, mode)


@needs_glibc
def test_the_feed_process_hands_a_bursts_memory_back() -> None:
    """glibc's rising threshold keeps a burst's 176 MB behind the small blocks that pin it;
    held at 128 kB, each megabyte block is unmapped when freed."""
    assert _kept_after_burst_mb("default") > 100
    assert _kept_after_burst_mb("hand back") < 20


TWO_THREADS = textwrap.dedent(
    """
    import sys, threading
    from kmedic import heap
    heap.ARENAS = int(sys.argv[1])
    assert heap.keep_freed_memory()
    def hwm_mb():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    def work():  # a stage's arrays: 120 MB in blocks of a megabyte, then freed
        blocks = [bytearray(1 << 20) for _ in range(120)]
        del blocks
    before = hwm_mb()
    work()  # the cycle, in the main thread
    other = threading.Thread(target=work)  # then the readiness sweep, in a thread of its own
    other.start()
    other.join()
    print(round(hwm_mb() - before))
    """
)


def _two_threads_peak_mb(arenas: int) -> int:
    return _printed(TWO_THREADS, str(arenas))


@needs_glibc
def test_what_one_thread_frees_another_reuses() -> None:
    """Freed memory is kept (for the page faults it saves); in one arena, a thread that frees
    120 MB and another that then takes 120 MB peak at 120 MB together, not 240 MB."""
    from kmedic.heap import ARENAS

    assert _two_threads_peak_mb(2) > 200  # an arena each: each keeps its own
    assert _two_threads_peak_mb(ARENAS) < 150
