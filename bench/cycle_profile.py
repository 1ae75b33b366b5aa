"""Where the whole cycle's time goes at 100 %, for bench/bench_cycle.py ``--profile``.

cProfile, in a child process of its own (profiling slows what it measures, so the timed runs
are never profiled): the snapshot build and the decision of one cycle against the fake Admin
port, and the decoding of its Metadata answer into columns (kmedic.metadata_wire), which
runs on kafka-python's I/O thread (where cProfile does not look) and is profiled here on the
main thread from the same bytes.
"""

from __future__ import annotations

import cProfile
import os
import pstats
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fake_admin_port import Answers
from fleet import Fleet
from kafka.protocol.metadata import MetadataResponse

from kmedic.gc_pause import collector_paused
from kmedic.metadata_wire import decode_metadata
from kmedic.partition_table import PartitionTable

# The functions listed per profile; KMEDIC_BENCH_PROFILE_TOP=40 lists more, when reading one.
TOP = int(os.environ.get("KMEDIC_BENCH_PROFILE_TOP", "8"))
ROOT = Path(__file__).resolve().parents[1]


class Profiles:
    """The top functions (own time) of each profiled call, by stage."""

    def __init__(self) -> None:
        self.top: dict[str, list[str]] = {}
        self.wall: dict[str, float] = {}

    def wrap(self, stage: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            profile = cProfile.Profile()
            start = time.perf_counter()
            try:
                return profile.runcall(call, *args, **kwargs)
            finally:
                self.wall[stage] = time.perf_counter() - start
                self.top[stage] = top_lines(profile)

        return run

    def metadata_read(self, f: Fleet) -> None:
        """Metadata for every topic, encoded at the newest version, decoded into a partition
        table (kmedic.metadata_wire) under the profiler."""
        version = MetadataResponse.max_version
        body = Answers(f, 0).metadata(None)
        payload = bytes(body.encode(version=version))

        def read() -> PartitionTable:
            return decode_metadata(payload, version).table

        with collector_paused():  # as the cycle reads (kmedic.gc_pause)
            self.wrap("metadata decode", read)()


def top_lines(profile: cProfile.Profile) -> list[str]:
    """The TOP functions by their own time: seconds own, with callees, calls, and where."""
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    rows = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:TOP]
    lines = []
    for (path, line, name), (_, calls, own, total, _) in rows:
        if path == "~":  # a built-in, named without its address (which changes every run)
            where = re.sub(r" at 0x[0-9a-f]+", "", name)
        else:
            where = f"`{name}` ({_short(path)}:{line})"
        lines.append(f"{own:.2f} s own, {total:.2f} s with callees, {calls:,} calls: {where}")
    return lines


def _short(path: str) -> str:
    """A path under the project relative to it; a library's from its package."""
    p = Path(path)
    if p.is_relative_to(ROOT):
        return str(p.relative_to(ROOT))
    if "site-packages/" in path:
        return path.split("site-packages/")[-1]
    return "python/" + path.split("/lib/python")[-1].split("/", 1)[-1]  # the standard library
