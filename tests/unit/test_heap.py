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


def _faults(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", REPEATED, mode], capture_output=True, text=True, check=True
    )
    return int(done.stdout)


@needs_glibc
def test_glibc_takes_the_setting() -> None:
    assert keep_freed_memory()


@needs_glibc
def test_arrays_freed_and_allocated_again_cost_no_page_faults() -> None:
    assert _faults("default") > 100  # glibc as it starts: handed back, faulted in again
    assert _faults("tuned") < 10
