"""Readiness sweep benchmark: what a full failure-readiness sweep costs at fleet size, what a
sweep that reuses unchanged scenarios costs, and whether the cycle notices a sweep running.

On bench_planner.py's synthetic cluster (270 brokers on 9 racks, 1.3 M replicas at RF 3;
seeded), in this process:

- a full sweep: every broker's and every rack's loss through the real gates and heal planner
  (manager.analyzer.readiness), CPU and wall time per scenario kind and in total;
- the next sweep on the same cluster a minute later: the scenario keys
  (manager.analyzer.scenario_keys) and every verdict reused;
- the cycle with and without a sweep: the heal decision on the cluster with one broker dead
  (what a cycle spends its CPU on at this size), run back to back as cycles, first alone,
  then while manager.daemon.readiness_sweep.ReadinessSweep sweeps in its thread, paced to
  its default 25 % share and holding back while a cycle runs, as the daemon runs it.

Prints the figures and replaces the ``## readiness`` section of docs/bench.md.
Usage: ``python bench/bench_readiness.py [--quick]`` (``--quick``: 12 brokers / 6 k
replicas, two cycles each way, no docs update).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import threading
import time
from contextlib import nullcontext
from typing import Any, cast

from bench_docs import write_section
from bench_planner import SHAPES, generate, kill_one

from kmedic.gc_pause import collector_paused
from kmedic.heap import keep_freed_memory
from manager.analyzer.planner import decide
from manager.analyzer.readiness import Verdict, scenarios, verdict
from manager.analyzer.scenario_keys import scenario_keys
from manager.config import ReadinessSettings
from manager.daemon.audit_trail import AuditTrail
from manager.daemon.readiness_sweep import ReadinessSweep
from manager.model.snapshot import Snapshot
from manager.model.snapshot_file import parse_snapshot
from manager.web.metrics import ManagerMetrics

SHAPE = "270 brokers / 1.3 M replicas"
QUICK = ("12 brokers / 6 k replicas", {"brokers": 12, "replicas": 6_000, "racks": 3})
CYCLES = 8


def timed_sweep(snap: Snapshot) -> tuple[list[Verdict], dict[str, list[float]], float, float]:
    """Every scenario's verdict, and the CPU seconds of each, by kind."""
    per_kind: dict[str, list[float]] = {}
    verdicts = []
    wall, cpu = time.perf_counter(), time.process_time()
    for scenario in scenarios(snap):
        t = time.process_time()
        verdicts.append(verdict(snap, scenario))
        per_kind.setdefault(scenario.kind, []).append(time.process_time() - t)
    return verdicts, per_kind, time.process_time() - cpu, time.perf_counter() - wall


def cycles(dead: Snapshot, sweeper: ReadinessSweep | None, count: int) -> list[float]:
    """``count`` heal decisions one after the other, each as a cycle (wall seconds each)."""
    took = []
    for _ in range(count):
        t = time.perf_counter()
        with sweeper.cycle_running() if sweeper else nullcontext(), collector_paused():
            decide(dead)
        took.append(time.perf_counter() - t)
        time.sleep(0.5)  # the loop's pause between cycles, scaled down
    return took


def main() -> None:
    keep_freed_memory()  # as every kmedic process does (kmedic/heap.py)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    name, shape = QUICK if args.quick else (SHAPE, SHAPES[SHAPE])
    count = 2 if args.quick else CYCLES
    t = time.perf_counter()
    data = generate(shape["brokers"], shape["replicas"], shape["racks"], seed=5)
    snap = parse_snapshot(json.dumps(data))
    kill_one(data, seed=7)
    dead = parse_snapshot(json.dumps(data))
    del data
    print(f"== {name}: built in {time.perf_counter() - t:.0f} s", flush=True)

    with collector_paused():
        verdicts, per_kind, full_cpu, full_wall = timed_sweep(snap)
    print(f"   full sweep: {len(verdicts)} scenarios, {full_cpu:.1f} s CPU", flush=True)
    later = snap.model_copy(update={"taken_at": snap.taken_at + 60_000})
    t, c = time.perf_counter(), time.process_time()
    keys_before = scenario_keys(snap, scenarios(snap))
    keys_after = scenario_keys(later, scenarios(later))
    keys_cpu = (time.process_time() - c) / 2
    keys_wall = (time.perf_counter() - t) / 2
    unchanged = sum(keys_before[s] == keys_after[s] for s in keys_before)
    print(f"   keys: {keys_cpu:.2f} s CPU, {unchanged} of {len(keys_before)} unchanged", flush=True)

    alone = cycles(dead, None, count)
    metrics = ManagerMetrics("bench")
    sweeper = ReadinessSweep(
        ReadinessSettings(first_sweep_s=0, period_s=3600),
        cast(Any, AlwaysLeading()),
        cast(AuditTrail, None),  # report() is never called here: nothing is audited
        metrics,
    )
    done = threading.Event()

    def sweep_then_say() -> None:
        sweeper.sweep(snap)
        done.set()

    thread = threading.Thread(target=sweep_then_say, daemon=True)
    thread.start()
    beside = cycles(dead, sweeper, count)
    sweeping = not done.is_set()  # the sweep was still running when the cycles ended
    sweeper.stop()  # a paced sweep at this size takes many minutes: its cost is measured above
    thread.join(600)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    text = render(
        name,
        verdicts,
        per_kind,
        (full_cpu, full_wall),
        (keys_cpu, keys_wall, unchanged, len(keys_before)),
        (alone, beside, sweeping),
        rss,
    )
    print(text)
    if not args.quick:
        write_section("readiness", text)


class AlwaysLeading:
    is_leader = True


def render(
    name: str,
    verdicts: list[Verdict],
    per_kind: dict[str, list[float]],
    full: tuple[float, float],
    keys: tuple[float, float, int, int],
    cycle_figures: tuple[list[float], list[float], bool],
    rss_mb: float,
) -> str:
    alone, beside, sweeping = cycle_figures
    healable = sum(v.healable for v in verdicts)
    longest = max((v.heal_s or 0.0 for v in verdicts), default=0.0)
    kinds = ", ".join(
        f"{len(times)} {kind} losses {statistics.median(times):.2f} s each (max {max(times):.2f} s)"
        for kind, times in per_kind.items()
    )
    pace_s = full[0] / ReadinessSettings().cpu_share
    return "\n".join(
        [
            "## readiness",
            "",
            f"`python bench/bench_readiness.py` on bench_planner.py's synthetic {name} "
            f"(seeded; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end).",
            "",
            f"- **A full sweep**: {len(verdicts)} scenarios in {full[0]:.1f} s CPU "
            f"({full[1]:.1f} s wall, unpaced); {kinds}. At the default 25 % share it spreads "
            f"over about {pace_s / 60:.0f} minutes, against the default period of 10. "
            f"{healable} of {len(verdicts)} losses healable; the longest estimated heal "
            f"{longest / 60:.0f} min (assumed 20 MB/s per move, the default limits).",
            f"- **The next sweep, nothing changed**: the scenario keys take {keys[0]:.2f} s CPU "
            f"({keys[1]:.2f} s wall) per sweep, and {keys[2]} of {keys[3]} scenarios keep their "
            "verdict: the sweep decides nothing again.",
            f"- **The cycle beside a sweep** (the heal decision with one broker dead, as cycles "
            f"{len(alone)} times each way): alone median {statistics.median(alone):.2f} s, max "
            f"{max(alone):.2f} s; with the sweep running median {statistics.median(beside):.2f} "
            f"s, max {max(beside):.2f} s"
            + ("" if sweeping else " (the sweep ended before the cycles did)")
            + ". A cycle that starts in the middle of a scenario shares the interpreter with "
            "the rest of that scenario; no scenario starts while a cycle runs.",
            f"- Peak RSS of the process: {rss_mb:.0f} MB (the cluster twice: alive and with "
            "one broker dead).",
            "",
        ]
    )


if __name__ == "__main__":
    main()
