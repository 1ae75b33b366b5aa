"""Whole-cycle benchmark: one manager cycle at fleet scale, stage by stage.

The fleet (bench/fleet.py: 270 brokers on 3 racks, 433,000 partitions at RF 3, one dead
broker, a few reassignments in flight, at 10 %, 30 % and 100 % of that) is served by a fake
Kafka Admin port in its own process (bench/fake_admin_port.py, Kafka's wire protocol), so the
manager's real code runs and only the network is simulated:

- **admin**: the cycle's Admin API reads - the controller quorum, DescribeCluster, Metadata,
  ListPartitionReassignments - on kafka-python, with their parsing (manager.monitor.sources);
- **configs**: the topics' min.insync.replicas (DescribeConfigs, cached between cycles);
- **observe**: the rest of the observation (agents' stats and loads as the feeds hold them);
- **snapshot**: the snapshot built from it (manager.monitor.observe), and the slow-broker
  score (manager.analyzer.slowness);
- **decide**: the planner (gates, goals, finish) - the heal of the dead broker;
- **audit**: the decision's audit record, as JSON.

Each size runs in a child process of its own (its peak RSS is its own), four cycles in a row;
the figures are the median of the last three (the first pays the fake port's encoding and the
configs cache).
The stats and loads the feeds would hold are made in memory, not read from Kafka: the feeds
read them in the background, not in the cycle.

Prints the figures and replaces the ``## cycle`` section of docs/bench.md.
The same cycle then runs on the real local cluster (bench/cycle_real.py, ``--real N``
partitions, 20,000 by default), and once more at 100 % under cProfile (bench/cycle_profile.py).

Usage: ``python bench/bench_cycle.py [--quick] [--real N] [--no-profile]`` (``--quick``: 1 %
only, no real cluster, no profile, no docs update).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_docs import write_section  # noqa: E402
from cycle_profile import TOP, Profiles  # noqa: E402
from cycle_real import RealCluster, fleet_of  # noqa: E402
from fleet import FULL_BROKERS, FULL_PARTITIONS, MB, Fleet, fleet  # noqa: E402

from kmedic import brokerstats as bs  # noqa: E402
from kmedic.gc_pause import collector_paused  # noqa: E402
from kmedic.heap import keep_freed_memory  # noqa: E402
from kmedic.localcluster import process  # noqa: E402
from manager.analyzer.planner import decide  # noqa: E402
from manager.audit.log import AuditRecord  # noqa: E402
from manager.daemon.slow_tracker import SlowTracker  # noqa: E402
from manager.model.decision import Decision  # noqa: E402
from manager.model.placement_config import PlacementConfig  # noqa: E402
from manager.model.policy import GoalSwitches, Policy  # noqa: E402
from manager.model.snapshot import Leadership  # noqa: E402
from manager.monitor import sources as sources_module  # noqa: E402
from manager.monitor.carried import Carried  # noqa: E402
from manager.monitor.feed_pair import AgentValue, FeedPair  # noqa: E402
from manager.monitor.load_columns import LoadStore, LoadView  # noqa: E402
from manager.monitor.observation import AgentView  # noqa: E402
from manager.monitor.observe import CapacitySettings, build_snapshot  # noqa: E402
from manager.monitor.sources import ClusterSources  # noqa: E402

SCALES = (0.1, 0.3, 1.0)
REAL_PARTITIONS = 20_000
# Each of the six brokers carries twice a fleet broker's replicas: the loads scaled so that
# the broker left in the dead one's rack can take all of its share within its limits.
REAL_TRAFFIC = 0.25
QUICK_SCALES = (0.01,)
CYCLES = 4  # the first warms up (the fake port's encoding, the configs cache); then three
STAGES = ("admin", "configs", "observe", "snapshot", "decide", "audit")
ADMIN_CALLS = (
    "describe_cluster",
    "list_partition_reassignments",
    "describe_configs",
)


def bounds(full: dict[str, Any], quiet: dict[str, Any] | None) -> list[str]:
    """What the page says under the tables (the targets at 1.3 M replicas are the fleet
    bench's, measured on the real manager process; how the cycle came to its columns, and its
    figures before them, are in docs/bench-history.md, "cycle: the one-table issue")."""
    return [
        "The collector is paused while the cycle reads the cluster and builds its snapshot, as",
        "while it decides (`kmedic/gc_pause.py`).",
    ]


class Clock:
    """Wall and CPU time spent in each stage of one cycle."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = dict.fromkeys(STAGES, 0.0)
        self.cpu: dict[str, float] = dict.fromkeys(STAGES, 0.0)

    def timed(self, stage: str, call: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                self.wall[stage] += time.perf_counter() - wall
                self.cpu[stage] += time.process_time() - cpu

        return run


def agent_views(f: Fleet, now_ms: int) -> dict[bytes, AgentValue]:
    """Each live broker's newest stats record, as the feed holds it: one record's models at a
    time (built without validation, as the feed's own objects are once validated), made an
    AgentView - its entries kept as columns - before the next is built, as records arrive."""
    return {str(b).encode(): AgentView(stats, now_ms, stats) for b, stats in fleet_stats(f, now_ms)}


def fleet_stats(
    f: Fleet, now_ms: int, interval_s: float = 30.0
) -> Iterator[tuple[int, bs.BrokerStats]]:
    """Each live broker's stats record as its agent would publish it (every partition it
    leads, every one it follows in the ISR), one at a time."""
    led: dict[int, list[int]] = {b: [] for b in f.live}
    followed: dict[int, list[int]] = {b: [] for b in f.live}
    for i, p in enumerate(f.parts):
        if p.leader in led:
            led[p.leader].append(i)
        for b in p.isr[1:]:
            if b in followed:  # a dead broker's agent reports nothing
                followed[b].append(i)
    for b in f.live:
        yield (
            b,
            bs.BrokerStats.model_construct(
                schema_version=1,
                sample_id=f"{b}-{now_ms}",
                chunk_index=0,
                chunk_count=1,
                cluster="bench",
                broker_id=b,
                host="127.0.0.1",
                rack=f.rack[b],
                timestamp_ms=now_ms,
                interval_s=interval_s,
                rate_window_s=interval_s,
                agent_version="bench",
                kafka_version="4.1",
                failure=None,
                leaders=[_leader(f.parts[i]) for i in led[b]],
                followers=[_follower(f.parts[i]) for i in followed[b]],
                reassigning=[],
                log_dirs=[],
                totals=bs.Totals.model_construct(
                    bytes_in_per_s=0.0,
                    bytes_out_per_s=0.0,
                    messages_in_per_s=0.0,
                    leader_count=len(led[b]),
                    follower_count=len(followed[b]),
                    reassigning_count=0,
                    under_replicated_count=0,
                    log_size_bytes=0,
                ),
                nic=None,
                latency=None,
            ),
        )


def _leader(p: Any) -> bs.LeaderReplica:
    return bs.LeaderReplica.model_construct(
        topic=p.topic,
        partition=p.number,
        bytes_in_per_s=0.0,
        bytes_out_per_s=0.0,
        messages_in_per_s=0.0,
        log_size_bytes=p.size,
        log_start_offset=0,
        log_end_offset=p.size // 1000,
        estimate="size_delta",
    )


def _follower(p: Any) -> bs.FollowerReplica:
    return bs.FollowerReplica.model_construct(
        topic=p.topic,
        partition=p.number,
        leader_id=p.leader,
        log_size_bytes=p.size,
        log_end_offset=p.size // 1000,
        in_isr=True,
    )


def fill_loads(store: LoadStore, f: Fleet, now_ms: int, traffic: float) -> None:
    """Each partition's load record into the loads feed's store, as records arrive."""
    for p in f.parts:
        store.put(
            p.topic,
            p.number,
            LoadView(
                bytes_in_per_s=(p.number % 7) * 0.004 * MB * traffic,
                bytes_out_per_s=(p.number % 5) * 0.006 * MB * traffic,
                messages_in_per_s=100.0,
                last_report_ms=now_ms,
                samples=10,
            ),
        )


def one_size(scale: float, *, profile: bool = False, quiet: bool = False) -> dict[str, Any]:
    """The figures of one size (run in a child process); with ``profile``, the profiles
    instead (bench/cycle_profile.py); ``quiet``: of the fleet with nothing dead or moving."""
    port = process.free_ports(1)[0]
    port_args = ["--port", str(port), *(["--quiet"] if quiet else [])]
    server = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "bench" / "fake_admin_port.py"),
            "--scale",
            str(scale),
            *port_args,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        before = _rss_mb()
        f = fleet(scale, quiet=quiet)
        fleet_mb = _rss_mb() - before  # the bench's own model of the cluster, not the manager's
        if not profile:
            figures = run_cycles(f, f"127.0.0.1:{port}")
            return {"scale": scale, "quiet": quiet, "fleet_mb": fleet_mb, **figures}
        profiles = Profiles()
        run_cycles(f, f"127.0.0.1:{port}", profiles=profiles)
        profiles.metadata_read(f)
        return {"scale": scale, "top": profiles.top, "wall": profiles.wall}
    finally:
        server.terminate()
        server.wait(timeout=30)


def run_cycles(
    f: Fleet, bootstrap: str, *, traffic: float = 1.0, profiles: Profiles | None = None
) -> dict[str, Any]:
    """CYCLES cycles of the manager's code against the Admin port at ``bootstrap``; the
    figures of the last, with each Admin request's round-trip. ``traffic`` scales the
    partitions' loads; with ``profiles``, the last cycle's build and decision are profiled."""
    now_ms = int(time.time() * 1000)
    sources = ClusterSources(
        cluster="bench",
        bootstrap=bootstrap,
        stats_topic="kmedic.brokerstats",
        loads_topic="kmedic.replica-loads",
        stats_lookback_s=600,
        request_timeout_s=120,
    )
    rss_before_feeds = _peak_rss_mb()
    pair = sources.feeds
    assert isinstance(pair, FeedPair)  # the feeds filled by hand, in this process
    pair.agents._values = agent_views(f, now_ms)
    fill_loads(pair.loads._store, f, now_ms, traffic)
    feeds_mb = _peak_rss_mb() - rss_before_feeds  # the process only grew so far: peak = now
    # A heal of the whole dead broker in one plan, as bench/bench_planner.py plans it.
    policy = Policy(
        dead_grace_ms=0,
        goals=GoalSwitches(even_spread=False),
        max_moves_per_cycle=10_000,
        max_moves_per_hour=20_000,
    )
    capacity = CapacitySettings()
    leadership = Leadership(holder="bench", epoch=1, current_epoch=1, is_leader=True)
    clock = Clock()
    sources.quorum.read = clock.timed("admin", sources.quorum.read)  # type: ignore[method-assign]
    sources._read_admin = clock.timed("admin", sources._read_admin)  # type: ignore[method-assign]
    configs = sources.topic_configs
    configs.read = clock.timed("configs", configs.read)  # type: ignore[method-assign]
    trips = RoundTrips()
    trips.watch(sources._client(), ADMIN_CALLS)
    trips.watch(sources_module, ("describe_partitions",))  # every topic, one Metadata request
    trips.watch(sources.quorum._client(), ("describe_metadata_quorum",))
    slow = SlowTracker()  # the slowness judged inside the build, as the daemon has it
    walls: list[dict[str, float]] = []
    cpus: list[dict[str, float]] = []
    for cycle in range(1, CYCLES + 1):
        watch = profiles.wrap if profiles is not None and cycle == CYCLES else _unwatched
        clock.wall, clock.cpu = dict.fromkeys(STAGES, 0.0), dict.fromkeys(STAGES, 0.0)
        trips.ms.clear()
        now_ms = int(time.time() * 1000)
        wall, cpu = time.perf_counter(), time.process_time()
        # The collector paused as the daemon pauses it (manager.daemon.observation).
        with collector_paused():
            obs = sources.observe(
                now_ms,
                placement=PlacementConfig(),
                leadership=leadership,
                own_moves=frozenset(),
                moves_last_hour=0,
            )
            # The Admin reads and configs inside observe() are timed on their own.
            inner = ("admin", "configs")
            clock.wall["observe"] = time.perf_counter() - wall - sum(clock.wall[s] for s in inner)
            clock.cpu["observe"] = time.process_time() - cpu - sum(clock.cpu[s] for s in inner)
            carried = Carried(slowness=slow.judge)
            snap = clock.timed("snapshot", watch("snapshot", build_snapshot))(
                obs, policy, capacity, carried
            )
        with collector_paused():  # as the daemon decides (kmedic.gc_pause)
            decision = clock.timed("decide", watch("decide", decide))(snap)
        audit_bytes = clock.timed("audit", audit_record_size)(decision)
        if cycle > 1:
            walls.append(dict(clock.wall))
            cpus.append(dict(clock.cpu))
    sources.stop_admin_clients()
    sources.quorum.close()
    return {
        "dead": f.dead,
        "brokers": len(f.brokers),
        "partitions": len(f.parts),
        "replicas": sum(len(p.replicas) for p in f.parts),
        "outcome": f"{decision.outcome} ({decision.kind})",
        "summary": decision.summary,
        "reasons": [f"{r.code}: {r.message}"[:200] for r in decision.reasons],
        "moves": len(decision.actions),
        "audit_kb": audit_bytes / 1000,
        "wall": _median_cycle(walls),
        "cpu": _median_cycle(cpus),
        "rss_mb": _peak_rss_mb(),
        "feeds_mb": feeds_mb,
        "round_trips_ms": dict(trips.ms),
    }


def _median_cycle(cycles: list[dict[str, float]]) -> dict[str, float]:
    """The median cycle of the measured ones, by its total (its stages add up to it)."""
    if len(cycles) == 1:
        return cycles[0]
    return sorted(cycles, key=lambda c: sum(c.values()))[len(cycles) // 2]


def _rss_mb() -> float:
    """The process's resident memory now (VmRSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _unwatched(stage: str, call: Any) -> Any:
    return call


class RoundTrips:
    """Each Admin request's wall time, by the call that sends it (one request each)."""

    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = {}

    def watch(self, client: Any, names: tuple[str, ...]) -> None:
        for name in names:
            setattr(client, name, self._timed(name, getattr(client, name)))

    def _timed(self, name: str, call: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.ms.setdefault(name, []).append((time.perf_counter() - start) * 1000)

        return run


def audit_record_size(decision: Decision) -> int:
    """The decision's audit record, as the daemon writes it (manager.daemon.audit_trail)."""
    record = AuditRecord(
        cluster="bench",
        instance="bench",
        epoch=1,
        kind="decision",
        summary=f"{decision.outcome}: {decision.summary}",
        reasons=tuple(f"{r.code}: {r.message}" for r in decision.reasons),
        partitions=tuple(sorted({f"{a.topic}:{a.partition}" for a in decision.actions})),
        details={"actions": [a.to_dict() for a in decision.actions]},
    )
    return len(record.to_json())


TRIPS = ("describe_partitions", *ADMIN_CALLS, "describe_metadata_quorum")


def table(results: list[dict[str, Any]]) -> list[str]:
    head = "| stage | " + " | ".join(
        f"{r['partitions']:,} partitions ({r['replicas'] / 1e6:.2f} M replicas)"
        + (", quiet" if r.get("quiet") else "")
        for r in results
    )
    lines = [head + " |", "| --- |" + " ---: |" * len(results)]
    for stage in (*STAGES, "total"):
        cells = []
        for r in results:
            wall = sum(r["wall"].values()) if stage == "total" else r["wall"][stage]
            cpu = sum(r["cpu"].values()) if stage == "total" else r["cpu"][stage]
            cells.append(f"{wall:.2f} / {cpu:.2f}")
        name = f"**{stage}**" if stage == "total" else stage
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    for call in TRIPS:
        cells = [
            " + ".join(f"{ms:,.0f}" for ms in r["round_trips_ms"].get(call, [])) or "-"
            for r in results
        ]
        lines.append(f"| `{call}` (ms) | " + " | ".join(cells) + " |")
    lines.append("| peak RSS (MB) | " + " | ".join(f"{r['rss_mb']:.0f}" for r in results) + " |")
    lines.append(
        "| of which the bench's fleet model (MB) | "
        + " | ".join(f"{r.get('fleet_mb', 0.0):.0f}" for r in results)
        + " |"
    )
    lines.append(
        "| **the manager's: peak less the fleet model (MB)** | "
        + " | ".join(f"{r['rss_mb'] - r.get('fleet_mb', 0.0):.0f}" for r in results)
        + " |"
    )
    lines.append(
        "| of which the feeds' records (MB) | "
        + " | ".join(f"{r['feeds_mb']:.0f}" for r in results)
        + " |"
    )
    lines.append(
        "| decision | "
        + " | ".join(f"{r['outcome']}, {r['moves']:,} moves" for r in results)
        + " |"
    )
    lines.append(
        "| audit record (kB) | " + " | ".join(f"{r['audit_kb']:,.0f}" for r in results) + " |"
    )
    return lines


def render(results: list[dict[str, Any]], real: dict[str, Any] | None) -> str:
    lines = [
        "## cycle",
        "",
        "`bench/bench_cycle.py`: one whole manager cycle at fleet scale. A fake Kafka Admin",
        "port (`bench/fake_admin_port.py`, Kafka's wire protocol through kafka-python's own",
        "message classes) serves a fleet of brokers on 3 racks with topics of 6 to 480",
        "partitions at RF 3, one dead broker and 8 reassignments in flight (`bench/fleet.py`,",
        f"100 % = {FULL_BROKERS} brokers, {FULL_PARTITIONS:,} partitions). The manager's real",
        "code runs; the stats and loads the feeds hold are made in memory, one record at a time",
        "as they arrive. Four cycles in a child process per size; the median of the last three",
        "(by total): wall / CPU seconds per stage, and each Admin request's round-trip (the",
        "call's wall time: the request, the broker's answer, and its decoding into columns).",
        "Peak RSS is the child's; the bench's own model of the fleet (what the fake feeds are",
        "made from, which a manager does not hold) is measured and subtracted. The last column,",
        "quiet: the same fleet at 100 % with every broker alive and nothing moving. No broker",
        "is over a limit, but the synthetic placement leaves the network load uneven, so the",
        "spread goal (switched off in this policy, as for the heal) plans what it would do: the",
        "most deciding a quiet cycle does.",
        "",
        *table(results),
    ]
    if real is not None:
        setup = real["setup_s"]
        lines += [
            "",
            "The same cycle on the real local cluster (`bench/cycle_real.py`): 6 KRaft brokers",
            "on 3 racks and one controller, the same mix of topics at RF 3 placed by Kafka, no",
            f"data; broker {real['dead']} SIGKILLed and fenced before the cycles (setup: start "
            f"{setup['start']:.0f} s, topics created {setup['create']:.0f} s, all led "
            f"{setup['led']:.0f} s, fenced {setup['fenced']:.0f} s). The loads the feeds hold",
            f"are {REAL_TRAFFIC:.0%} of the fleet's per partition: each of the six brokers holds",
            "twice a fleet broker's replicas, and the one left in the dead broker's rack takes",
            "all of its share.",
            "",
            *table([real]),
        ]
    heal = [r for r in results if not r.get("quiet")]
    quiet = next((r for r in results if r.get("quiet")), None)
    lines += ["", *bounds(heal[-1], quiet)]
    lines += [
        "",
        "The profile at 100 % is printed by the run, not kept here (`bench/cycle_profile.py`).",
    ]
    return "\n".join(lines) + "\n"


def render_profile(profiled: dict[str, Any]) -> str:
    """The profile at 100 %: printed for whoever reads the run, not kept on the figures page."""
    lines = [
        f"The profile at 100 % (cProfile in a run of its own; {TOP} functions by",
        "their own time; profiled, each stage runs about twice as long):",
    ]
    for stage, top in profiled["top"].items():
        lines += ["", f"- {stage} ({profiled['wall'][stage]:.1f} s profiled):"]
        lines += [f"  - {line}" for line in top]
    return "\n".join(lines) + "\n"


def child(*args: str) -> dict[str, Any]:
    """One run in a process of its own (its peak RSS is its own)."""
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"bench_cycle: the run {args} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def real_run(partitions: int) -> dict[str, Any]:
    with RealCluster(partitions) as real:
        print(f"real cluster: ready ({json.dumps(real.setup_s)})", flush=True)
        result = child("--real-child", real.bootstrap)
    return {**result, "setup_s": real.setup_s}


def main() -> None:
    keep_freed_memory()  # as every kmedic process does (kmedic/heap.py)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 %% only, no docs update")
    parser.add_argument(
        "--real",
        type=int,
        default=REAL_PARTITIONS,
        metavar="N",
        help="partitions on the real local cluster (0: skip it)",
    )
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled run at 100 %%")
    parser.add_argument("--one", type=float, help=argparse.SUPPRESS)  # a child's size
    parser.add_argument("--profile-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--quiet-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--real-child", metavar="BOOTSTRAP", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one_size(args.one, profile=args.profile_child, quiet=args.quiet_child)))
        return
    if args.real_child:
        bootstrap = args.real_child
        print(json.dumps(run_cycles(fleet_of(bootstrap), bootstrap, traffic=REAL_TRAFFIC)))
        return
    results = []
    for scale in QUICK_SCALES if args.quick else SCALES:
        results.append(child("--one", str(scale)))
        print(f"{scale:.0%}: done", flush=True)
    scales = QUICK_SCALES if args.quick else SCALES
    results.append(child("--one", str(scales[-1]), "--quiet-child"))
    print(f"{scales[-1]:.0%}, quiet: done", flush=True)
    real = real_run(args.real) if args.real and not args.quick else None
    profiled = None
    if not (args.quick or args.no_profile):
        profiled = child("--one", str(SCALES[-1]), "--profile-child")
    text = render(results, real)
    print(text)
    if profiled is not None:
        print(render_profile(profiled))
    if not args.quick:
        write_section("cycle", text)


if __name__ == "__main__":
    main()
