"""The real manager process at fleet scale: `kmedic manager` (the entry point an operator
starts) looks after the fleet of bench/fleet.py (100 % = 270 brokers, 433,000 partitions at
RF 3, one broker dead, nobody else moving replicas) served by the fake Admin port
(bench/fake_admin_port.py ``--fresh``: each Metadata answer built for its request), while
every live broker's agent record arrives at the agents' busy interval and every partition's
load record at the stream's trigger interval (bench/fleet_feeds.py, a process of its own),
through a real Kafka broker holding kmedic's own topics (`own_topics_bootstrap`, with
ZooKeeper from the same local cluster). The readiness sweep runs on its own schedule.

Measured from outside the manager: its peak RSS (``VmHWM``), each cycle's and each
``decide()``'s wall time (the manager's own ``kmedic_cycle_duration_seconds`` and
``kmedic_plan_duration_seconds`` histograms, read from its /metrics after every cycle), the
CPU each of its threads spent per second (``/proc/PID/task``: the feed threads carry their
names, kmedic/thread_names.py), what each cycle decided (its log), the feeder's schedule, and
the machine's CPU pressure (``/proc/pressure/cpu``).

Settings: the manager's, agents' and stream's shipped defaults (read from their config
models and printed), except the policy's (POLICY, printed): the dead broker healed in the
measured cycles rather than ten minutes later, and move budgets that let a fleet broker's heal
through (observe mode, the shipped default: the heal is decided and audited, nothing is
written).

Prints the figures and replaces the ``## the real manager at fleet scale`` section of
docs/bench.md (not with ``--quick`` or ``--every-sample-whole``).

Usage: ``python bench/bench_fleet_manager.py [--scale 1.0] [--cycles 10] [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_docs import write_section  # noqa: E402

from agent.config import AgentConfig  # noqa: E402
from agent.publisher import ensure_topic  # noqa: E402
from kmedic.localcluster import ClusterSpec, LocalCluster, process  # noqa: E402
from manager.config import ManagerConfig, ReadinessSettings  # noqa: E402
from streaming.config import StreamConfig, duration_seconds  # noqa: E402
from streaming.topics import ensure_output_topics  # noqa: E402

MB = 1024 * 1024
SECTION = "the real manager at fleet scale"
SECTION_OWN_CORE = "the real manager at fleet scale, on a core of its own"
TARGETS = {"rss_mb": 1024.0, "cycle_s": 3.0, "decide_s": 0.3}
# The departures from the shipped policy, printed with the figures: the dead broker healed in
# the measured cycles, not ten minutes later; and move budgets sized to the fleet - a fleet
# broker holds about 4,800 replicas, and the shipped per-cycle budget (2,000, sized for a
# medium cluster: docs/planner.md, "Move budgets") refuses its heal whole.
POLICY = {"dead_grace_ms": 0, "max_moves_per_cycle": 10_000, "max_moves_per_hour": 20_000}
START_TIMEOUT_S = 900.0


@dataclass
class Shipped:
    """The defaults the run is made at, read from the config models."""

    cycle_s: float = ManagerConfig.model_fields["interval_s"].default
    agent_busy_s: float = AgentConfig.model_fields["busy_interval_s"].default
    agent_s: float = AgentConfig.model_fields["interval_s"].default
    trigger_s: float = 60.0
    first_sweep_s: float = ReadinessSettings().first_sweep_s
    sweep_period_s: float = ReadinessSettings().period_s

    def __post_init__(self) -> None:
        trigger = StreamConfig.model_fields["trigger_interval"].default
        self.trigger_s = duration_seconds(trigger)


@dataclass
class Watch:
    """What is read of the manager from outside, once a second."""

    pid: int
    metrics_url: str
    cycles: list[dict[str, Any]] = field(default_factory=list)
    threads: dict[str, float] = field(default_factory=dict)  # CPU seconds by thread group
    peak_rss_mb: float = 0.0
    child_peak_rss_mb: dict[int, float] = field(default_factory=dict)  # by process id
    pressure: list[float] = field(default_factory=list)
    _last: tuple[float, float, float, float, float] | None = None
    _cpu_at: dict[int, tuple[str, float]] = field(default_factory=dict)

    def sample(self) -> None:
        self.peak_rss_mb = max(self.peak_rss_mb, _status_kb(self.pid, "VmHWM") / 1024)
        for child in _children(self.pid):  # the feed process (manager.monitor.feed_process)
            peak = _status_kb(child, "VmHWM") / 1024
            self.child_peak_rss_mb[child] = max(self.child_peak_rss_mb.get(child, 0.0), peak)
            self._thread_cpu(child, "feed process: ")
        self._thread_cpu(self.pid, "")
        self.pressure.append(_cpu_pressure())
        try:
            text = urllib.request.urlopen(self.metrics_url, timeout=5).read().decode()
        except OSError:
            return
        now = (
            _metric(text, "kmedic_cycle_duration_seconds_count"),
            _metric(text, "kmedic_cycle_duration_seconds_sum"),
            _metric(text, "kmedic_plan_duration_seconds_count"),
            _metric(text, "kmedic_plan_duration_seconds_sum"),
            _metric(text, "kmedic_observe_duration_seconds_sum"),
        )
        # Deltas from one cycle's end to the next: a sample taken inside a cycle (its
        # observation counted, its end not yet) must not take that cycle's share.
        if self._last is None:
            self._last = now
        elif now[0] > self._last[0]:
            decided = now[2] - self._last[2]
            self.cycles.append(
                {
                    "at": time.time(),
                    "cycles": now[0] - self._last[0],
                    "cycle_s": (now[1] - self._last[1]) / (now[0] - self._last[0]),
                    "decide_s": (now[3] - self._last[3]) / decided if decided else None,
                    "observe_s": (now[4] - self._last[4]) / (now[0] - self._last[0]),
                    "rss_mb": _status_kb(self.pid, "VmRSS") / 1024,
                }
            )
            self._last = now

    def _thread_cpu(self, pid: int, prefix: str) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            return
        for task in tasks:
            try:
                comm = (task / "comm").read_text().strip()
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            cpu = (int(fields[11]) + int(fields[12])) / tick
            tid = int(task.name)
            group = prefix + _group(comm, tid == pid and not prefix)
            before = self._cpu_at.get(tid, (group, 0.0))[1]
            self.threads[group] = self.threads.get(group, 0.0) + cpu - before
            self._cpu_at[tid] = (group, cpu)


def _group(comm: str, main: bool) -> str:
    if main:
        return "cycle (main thread)"
    if comm.startswith("feed-"):
        return f"feed thread {comm}"
    if comm == "kmedic-feeds":
        return "main thread (copies handed to the manager)"
    if comm.startswith("rdk:"):
        return "librdkafka threads (feeds' fetches, audit producer)"
    if comm in ("readiness", "registrations"):
        return f"{comm} thread"
    return "other threads (ZooKeeper, HTTP, kafka-python)"


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _status_kb(pid: int, key: str) -> float:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(rf"^{key}:\s+(\d+) kB", text, flags=re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _cpu_pressure() -> float:
    """The share of the last 10 s some runnable task waited for a CPU (PSI avg10, %)."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except OSError:
        return float("nan")
    return float(re.search(r"avg10=([\d.]+)", line).group(1))  # type: ignore[union-attr]


def _metric(text: str, name: str) -> float:
    found = re.search(rf"^{name}\{{[^}}]*\}} ([0-9.e+-]+)$", text, flags=re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _manager_config(
    path: Path,
    fake: str,
    ops: str,
    zk: str,
    http_port: int,
    spool: Path,
    extra: dict[str, Any] | None = None,
) -> None:
    path.write_text(
        json.dumps(
            (extra or {})
            | {
                "cluster": "fleet",
                "bootstrap": fake,
                "own_topics_bootstrap": ops,
                "zookeeper": {"zk_connect": zk},
                "policy": dict(POLICY),
                "http": {"port": http_port},
                "audit": {"spool_dir": str(spool)},
            }
        )
    )


def _lines(stream: Any, into: list[str]) -> threading.Thread:
    def pump() -> None:
        for line in stream:
            into.append(line)

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def run(
    scale: float,
    cycles: int,
    shipped: Shipped,
    whole_s: float,
    core: int | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One run; ``whole_s``: how often an agent's record is whole (the agent's interval;
    0: every busy sample whole, as agents sent them before records of scope moving);
    ``core``: the manager (and its feed process, which inherits where it may run) on that
    core, everything else (Kafka, ZooKeeper, the fake
    port, the feeder) on the others - the manager on a host of its own, in miniature."""
    if core is not None:
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)) - {core})
    workdir = Path(tempfile.mkdtemp(prefix="kmedic-bench-fleet-manager-"))
    spec = ClusterSpec(brokers=1, racks=("/ops",), kafka_defaults=True, broker_heap_mb=1024)
    started = time.monotonic()
    cluster = LocalCluster.start(spec, workdir / "ops")
    children: list[subprocess.Popen[str]] = []
    try:
        ops, zk = cluster.bootstrap_servers, cluster.zk_connect
        ensure_topic(
            AgentConfig(broker_id=1, bootstrap=ops, exporter_url="http://127.0.0.1:1/metrics")
        )
        ensure_output_topics(StreamConfig(bootstrap=ops))
        fake_port, http_port = process.free_ports(2)
        fake = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "bench" / "fake_admin_port.py"),
                *("--scale", str(scale), "--port", str(fake_port), "--fresh", "--no-moves"),
                *("--timings", str(workdir / "fake-port-timings.txt")),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(fake)
        assert fake.stdout is not None and fake.stdout.readline().strip() == "ready"
        feeder = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "bench" / "fleet_feeds.py"),
                *("--scale", str(scale), "--bootstrap", ops),
                *("--stats-interval", str(shipped.agent_busy_s)),
                *("--whole-interval", str(whole_s)),
                *("--loads-interval", str(shipped.trigger_s)),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(feeder)
        feeds_said: list[str] = []
        assert feeder.stdout is not None
        ready = json.loads(feeder.stdout.readline())
        _lines(feeder.stdout, feeds_said)
        config = workdir / "manager.json"
        _manager_config(
            config, f"127.0.0.1:{fake_port}", ops, zk, http_port, workdir / "spool", extra
        )
        log_path = workdir / "manager.log"
        with log_path.open("w") as log_file:
            manager = subprocess.Popen(
                [sys.executable, "-m", "composition.cli", "manager", "--config", str(config)],
                cwd=ROOT,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                text=True,
                preexec_fn=None if core is None else lambda: os.sched_setaffinity(0, {core}),
            )
        children.append(manager)
        setup_s = time.monotonic() - started
        watch = Watch(manager.pid, f"http://127.0.0.1:{http_port}/metrics")
        deadline = time.monotonic() + START_TIMEOUT_S
        measured_from: float | None = None
        while time.monotonic() < deadline:
            if manager.poll() is not None:
                raise SystemExit(f"the manager ended ({manager.returncode}): {_tail(log_path)}")
            watch.sample()
            outcomes = _outcomes(log_path)
            if measured_from is None and any(o["outcome"] != "wait" for o in outcomes):
                measured_from = time.time()
                watch.threads.clear()
                watch.cycles.clear()
                cpu_from = time.monotonic()
            if measured_from is not None and len(watch.cycles) >= cycles:
                break
            time.sleep(1.0)
        else:
            raise SystemExit(f"not {cycles} cycles in {START_TIMEOUT_S:.0f} s: {_tail(log_path)}")
        measured_s = time.monotonic() - cpu_from
        return {
            "scale": scale,
            "brokers": ready["brokers"],
            "partitions": ready["partitions"],
            "setup_s": setup_s,
            "measured_s": measured_s,
            "cycles": watch.cycles,
            "outcomes": [o for o in _outcomes(log_path) if o["at"] >= measured_from - 1],
            "threads_cpu_per_s": {k: v / measured_s for k, v in watch.threads.items()},
            "peak_rss_mb": watch.peak_rss_mb,
            "feed_process_peak_rss_mb": max(watch.child_peak_rss_mb.values(), default=0.0),
            "feed_processes": len(watch.child_peak_rss_mb),
            "pressure": watch.pressure,
            "feeder": json.loads(feeds_said[-1]) if feeds_said else {},
            "sweeps": _sweeps(log_path),
            "fake_port_s": _port_times(workdir / "fake-port-timings.txt", measured_from),
        }
    finally:
        for child in reversed(children):
            child.terminate()
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
        cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def _outcomes(log_path: Path) -> list[dict[str, Any]]:
    out = []
    for line in log_path.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if doc.get("event") == "cycle":
            at = doc.get("timestamp") or doc.get("ts") or ""
            out.append(
                {
                    "at": _epoch(at),
                    "outcome": doc.get("outcome"),
                    "actions": doc.get("actions"),
                    "sentence": str(doc.get("sentence", ""))[:120],
                }
            )
    return out


def _port_times(path: Path, since: float) -> list[float]:
    """How long the fake port took to build each whole-cluster Metadata answer it served
    over the measured cycles (the manager waits that long before its first byte)."""
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return [float(took) for at, took in rows if float(at) >= since]


def _sweeps(log_path: Path) -> list[str]:
    return [
        line[:200]
        for line in log_path.read_text(errors="replace").splitlines()
        if "readiness" in line and ("sweep" in line)
    ][-4:]


def _epoch(text: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _tail(path: Path) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-20:])


def report(result: dict[str, Any], shipped: Shipped) -> list[str]:
    cycles = result["cycles"]
    walls = sorted(c["cycle_s"] for c in cycles)
    decides = sorted(c["decide_s"] for c in cycles if c["decide_s"] is not None)
    observes = sorted(c.get("observe_s", float("nan")) for c in cycles)
    pressure = [p for p in result["pressure"] if p == p]
    threads: dict[str, float] = result["threads_cpu_per_s"]
    feed_rss = result.get("feed_process_peak_rss_mb", 0.0)
    both = result["peak_rss_mb"] + feed_rss
    lines = [
        f"{result['brokers']} live brokers, {result['partitions']:,} partitions; "
        f"{len(cycles)} cycles measured over {result['measured_s']:.0f} s "
        f"(setup {result['setup_s']:.0f} s). {machine_line()}"
        + (
            f" The manager and its feed process on core {result['core']}, everything else"
            " (the broker, ZooKeeper, the fake port, the feeder) on the other: the manager on a"
            " host of its own, in miniature."
            if result.get("core") is not None
            else " Every process shares every core."
        ),
        "",
        f"Settings: manager cycle {shipped.cycle_s:g} s, agents' busy interval "
        f"{shipped.agent_busy_s:g} s (every broker at it, taking part in the heal), "
        + (
            f"a whole record every {result['whole_s']:g} s (the agents' interval) and the moving "
            "partitions' only between, "
            if result.get("whole_s")
            else "every busy sample whole (agents before records of scope moving: a departure), "
        )
        + f"stream trigger {shipped.trigger_s:g} s, readiness sweep "
        f"{shipped.first_sweep_s:g} s after start and every {shipped.sweep_period_s:g} s, "
        "observe mode (all shipped defaults). Departures: "
        + ", ".join(f"policy.{k} {v:,}" for k, v in POLICY.items())
        + " (the heal in the measured cycles; the shipped budgets of 2,000 a cycle and 4,000 "
        "an hour refuse a fleet broker's heal whole)"
        + (f"; and the config {json.dumps(result['extra'])}." if result.get("extra") else "."),
        "",
        "| figure | median | max | target | |",
        "| --- | ---: | ---: | ---: | --- |",
        _row("a whole cycle (s)", walls, TARGETS["cycle_s"]),
        _row("`decide()` (s)", decides, TARGETS["decide_s"]),
        "| of a cycle, observing: the Admin answers, the feeds' copy, the snapshot (s) | "
        f"{_median(observes):.2f} | {max(observes, default=float('nan')):.2f} | | |",
        f"| peak RSS of the manager's process (MB) | | {result['peak_rss_mb']:,.0f} | | |",
        f"| peak RSS of its feed process (MB) | | {feed_rss:,.0f} | | |",
        f"| peak RSS, both (MB) | | {both:,.0f} | {TARGETS['rss_mb']:,.0f} | "
        f"{'met' if both <= TARGETS['rss_mb'] else '**not met**'} |",
        "",
        f"The fake port built each whole-cluster Metadata answer in "
        f"{_median(result.get('fake_port_s', [])):.2f} s (median; max "
        f"{max(result.get('fake_port_s', []), default=float('nan')):.2f} s, "
        f"{len(result.get('fake_port_s', []))} answers; every entry encoded for its request, "
        "bench/metadata_build.py): part of the cycle's wall time, as a broker's is.",
        "",
        "The manager's CPU by thread (its feed process's threads named so), seconds per "
        f"second over the measured cycles: {sum(threads.values()):.3f} in all - "
        + "; ".join(
            f"{name} {cpu:.3f}"
            for name, cpu in sorted(threads.items(), key=lambda kv: -kv[1])
            if round(cpu, 3) > 0
        )
        + " (the other threads under 0.001).",
        "",
        "Each cycle, in order (whole / observing / deciding, s): "
        + "; ".join(
            f"{c['cycle_s']:.2f} / {c.get('observe_s', float('nan')):.2f} / "
            f"{c['decide_s'] if c['decide_s'] is not None else float('nan'):.2f}"
            for c in cycles
        ),
        "",
        "Decisions: "
        + "; ".join(
            f"{o['outcome']} ({o['actions']} actions)" for o in result["outcomes"][-len(cycles) :]
        ),
        "",
        f"Feeder: {json.dumps(result['feeder'])}",
        "",
        f"CPU pressure (some, avg10) over the run: median "
        f"{_median(pressure):.0f} %, max {max(pressure, default=0):.0f} %.",
    ]
    return lines


def machine_line() -> str:
    memory = Path("/proc/meminfo").read_text().split()[1]
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    return f"Machine: {os.cpu_count()} cores ({model}), {int(memory) // 1024 // 1024} GB."


def _row(name: str, values: list[float], target: float) -> str:
    if not values:
        return f"| {name} | - | - | {target:g} | not measured |"
    worst = max(values)
    return (
        f"| {name} | {_median(values):.2f} | {worst:.2f} | {target:g} | "
        f"{'met' if worst <= target else '**not met**'} |"
    )


def _median(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="1 %% of the fleet, 1 cycle")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    parser.add_argument(
        "--manager-core",
        type=int,
        help="the manager and its feed process on this core, everything else on the others",
    )
    parser.add_argument(
        "--extra",
        type=json.loads,
        help="more of the manager's config, as JSON (a departure: printed, docs not written)",
    )
    parser.add_argument(
        "--every-sample-whole",
        action="store_true",
        help="every busy sample whole, as agents sent them before records of scope moving",
    )
    args = parser.parse_args()
    shipped = Shipped()
    scale, cycles = (0.01, 1) if args.quick else (args.scale, args.cycles)
    whole_s = shipped.agent_s if not args.every_sample_whole else 0.0
    result = run(scale, cycles, shipped, whole_s, args.manager_core, args.extra)
    result["whole_s"] = whole_s
    result["core"] = args.manager_core
    result["extra"] = args.extra
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    lines = report(result, shipped)
    print(f"## {SECTION}\n")
    print("\n".join(lines))
    if not (args.quick or args.every_sample_whole or args.extra):
        # Two sections: every process sharing both cores (the bench's own load - the broker,
        # the feeder, the fake port - beside the manager), and the manager with its feed
        # process on a core of its own, as on a host of its own.
        section = SECTION if args.manager_core is None else SECTION_OWN_CORE
        intro = (__doc__ or "").split("\n\n")[0].replace("\n", " ")
        write_section(
            section,
            "\n".join([f"## {section}", "", f"`bench/bench_fleet_manager.py`: {intro}", "", *lines])
            + "\n",
        )


if __name__ == "__main__":
    main()
