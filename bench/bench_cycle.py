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

Each size runs in a child process of its own (its peak RSS is its own), three cycles in a row;
the figures are the third's (the first pays the fake port's encoding and the configs cache).
The stats and loads the feeds would hold are made in memory, not read from Kafka: the feeds
read them in the background, not in the cycle.

Prints the figures and replaces the ``## cycle`` section of docs/bench.md.
Usage: ``python bench/bench_cycle.py [--quick]`` (``--quick``: 1 % only, no docs update).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_docs import write_section  # noqa: E402
from fleet import FULL_BROKERS, FULL_PARTITIONS, MB, Fleet, fleet  # noqa: E402

from kmedic import brokerstats as bs  # noqa: E402
from kmedic.localcluster import process  # noqa: E402
from manager.analyzer.planner import decide  # noqa: E402
from manager.analyzer.slowness import judge  # noqa: E402
from manager.audit.log import AuditRecord  # noqa: E402
from manager.daemon.gc_pause import collector_paused  # noqa: E402
from manager.model.decision import Decision  # noqa: E402
from manager.model.placement_config import PlacementConfig  # noqa: E402
from manager.model.snapshot import Leadership, Policy  # noqa: E402
from manager.monitor.observe import AgentView, CapacitySettings, LoadView, build_snapshot  # noqa: E402
from manager.monitor.sources import ClusterSources  # noqa: E402

SCALES = (0.1, 0.3, 1.0)
QUICK_SCALES = (0.01,)
CYCLES = 3
STAGES = ("admin", "configs", "observe", "snapshot", "decide", "audit")
# What bounds the figures at 100 % (measured on this machine, 2 cores; issue 29's targets).
BOUNDS = (
    "The collector is paused while the cycle reads the cluster and builds its snapshot, as",
    "while it decides (`manager/daemon/gc_pause.py`): at 100 % that halved the admin and",
    "snapshot stages (10.3 s and 10.8 s before, 22.7 s in all). The collection it defers",
    "runs at the next allocations: that is most of the audit stage at 30 % and 100 %.",
    "",
    "Targets at 1.3 M replicas: a heal cycle within 3 s, `decide()` within 0.3 s, the",
    "manager within 800 MB. None is met yet, and each is bounded by pure Python:",
    "",
    "- admin: kafka-python decodes the Metadata answer (433,000 partitions) field by field",
    "  in Python on its I/O thread, about 3.5 s, and `parse_topics` makes the partition",
    "  records, about 0.8 s. librdkafka parses in C, but its metadata has no offline replicas,",
    "  which the failed-disk heal needs.",
    "- snapshot: one validated pydantic model per partition and per load, with the sizes",
    "  joined from the agents' records (`manager/monitor/observe.py`).",
    "- decide: the planner's index (`ClusterState`) is rebuilt from the snapshot each cycle",
    "  (0.42 s of the 0.58 s in bench_planner.py's heal).",
    "- RSS: the process holds the feeds' newest records (1.3 M replica entries of the",
    "  agents' stats, 433,000 loads), the Admin answer, the snapshot and the index at once.",
    "",
    "What would meet them: a snapshot built without per-partition validation from already",
    "checked Admin answers, the index kept across cycles and updated from what changed, and",
    "the feeds' records kept as columns instead of one object per replica.",
)


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


def agent_views(f: Fleet, now_ms: int) -> dict[bytes, AgentView]:
    """Each live broker's newest stats record, as the feed holds it (built without validation,
    as the feed's own objects are once validated)."""
    leaders: dict[int, list[bs.LeaderReplica]] = {b: [] for b in f.live}
    followers: dict[int, list[bs.FollowerReplica]] = {b: [] for b in f.live}
    for p in f.parts:
        leaders[p.leader].append(
            bs.LeaderReplica.model_construct(
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
        )
        for b in p.isr[1:]:
            followers[b].append(
                bs.FollowerReplica.model_construct(
                    topic=p.topic,
                    partition=p.number,
                    leader_id=p.leader,
                    log_size_bytes=p.size,
                    log_end_offset=p.size // 1000,
                    in_isr=True,
                )
            )
    views = {}
    for b in f.live:
        stats = bs.BrokerStats.model_construct(
            schema_version=1,
            sample_id=f"{b}-{now_ms}",
            chunk_index=0,
            chunk_count=1,
            cluster="bench",
            broker_id=b,
            host="127.0.0.1",
            rack=f.rack[b],
            timestamp_ms=now_ms,
            interval_s=30.0,
            rate_window_s=30.0,
            agent_version="bench",
            kafka_version="4.1",
            failure=None,
            leaders=leaders[b],
            followers=followers[b],
            reassigning=[],
            log_dirs=[],
            totals=bs.Totals.model_construct(
                bytes_in_per_s=0.0,
                bytes_out_per_s=0.0,
                messages_in_per_s=0.0,
                leader_count=len(leaders[b]),
                follower_count=len(followers[b]),
                reassigning_count=0,
                under_replicated_count=0,
                log_size_bytes=0,
            ),
            nic=None,
            latency=None,
        )
        views[str(b).encode()] = AgentView(stats, now_ms, stats)
    return views


def load_views(f: Fleet, now_ms: int) -> dict[bytes, LoadView]:
    return {
        f"{p.topic}:{p.number}".encode(): LoadView(
            bytes_in_per_s=(p.number % 7) * 0.004 * MB,
            bytes_out_per_s=(p.number % 5) * 0.006 * MB,
            messages_in_per_s=100.0,
            last_report_ms=now_ms,
            samples=10,
        )
        for p in f.parts
    }


def one_size(scale: float) -> dict[str, Any]:
    """The figures of one size (run in a child process)."""
    port = process.free_ports(1)[0]
    port_args = ["--port", str(port)]
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
        return _cycles(scale, port)
    finally:
        server.terminate()
        server.wait(timeout=30)


def _cycles(scale: float, port: int) -> dict[str, Any]:
    f = fleet(scale)
    now_ms = int(time.time() * 1000)
    sources = ClusterSources(
        cluster="bench",
        bootstrap=f"127.0.0.1:{port}",
        stats_topic="kmedic.brokerstats",
        loads_topic="kmedic.replica-loads",
        stats_lookback_s=600,
        request_timeout_s=120,
    )
    sources.agents._values = agent_views(f, now_ms)
    sources.loads._values = load_views(f, now_ms)
    # A heal of the whole dead broker in one plan, as bench/bench_planner.py plans it.
    policy = Policy(
        dead_grace_ms=0, even_spread=False, max_moves_per_cycle=10_000, max_moves_per_hour=20_000
    )
    capacity = CapacitySettings()
    leadership = Leadership(holder="bench", epoch=1, current_epoch=1, is_leader=True)
    clock = Clock()
    sources.quorum.read = clock.timed("admin", sources.quorum.read)  # type: ignore[method-assign]
    sources._read_admin = clock.timed("admin", sources._read_admin)  # type: ignore[method-assign]
    configs = sources.topic_configs
    configs.read = clock.timed("configs", configs.read)  # type: ignore[method-assign]
    tracks: dict[int, Any] = {}
    for _ in range(CYCLES):
        clock.wall, clock.cpu = dict.fromkeys(STAGES, 0.0), dict.fromkeys(STAGES, 0.0)
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
            snap = clock.timed("snapshot", build_snapshot)(obs, policy, capacity)
        tracks, snap, _ = clock.timed("snapshot", judge)(tracks, snap, now_ms)
        with collector_paused():  # as the daemon decides (manager.daemon.gc_pause)
            decision = clock.timed("decide", decide)(snap)
        audit_bytes = clock.timed("audit", audit_record_size)(decision)
    sources.stop_admin_clients()
    return {
        "scale": scale,
        "brokers": len(f.brokers),
        "partitions": len(f.parts),
        "replicas": sum(len(p.replicas) for p in f.parts),
        "outcome": f"{decision.outcome} ({decision.kind})",
        "summary": decision.summary,
        "reasons": [f"{r.code}: {r.message}"[:200] for r in decision.reasons],
        "moves": len(decision.actions),
        "audit_kb": audit_bytes / 1000,
        "wall": clock.wall,
        "cpu": clock.cpu,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


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


def render(results: list[dict[str, Any]]) -> str:
    head = "| stage | " + " | ".join(
        f"{r['partitions']:,} partitions ({r['replicas'] / 1e6:.2f} M replicas)" for r in results
    )
    lines = [
        "## cycle",
        "",
        "`bench/bench_cycle.py`: one whole manager cycle at fleet scale. A fake Kafka Admin",
        "port (`bench/fake_admin_port.py`, Kafka's wire protocol through kafka-python's own",
        "message classes) serves a fleet of brokers on 3 racks with topics of 6 to 480",
        "partitions at RF 3, one dead broker and 8 reassignments in flight (`bench/fleet.py`,",
        f"100 % = {FULL_BROKERS} brokers, {FULL_PARTITIONS:,} partitions). The manager's real",
        "code runs; the stats and loads the feeds hold are made in memory. The third of three",
        "cycles, in a child process per size: wall / CPU seconds per stage.",
        "",
        head + " |",
        "| --- |" + " ---: |" * len(results),
    ]
    for stage in (*STAGES, "total"):
        cells = []
        for r in results:
            wall = sum(r["wall"].values()) if stage == "total" else r["wall"][stage]
            cpu = sum(r["cpu"].values()) if stage == "total" else r["cpu"][stage]
            cells.append(f"{wall:.2f} / {cpu:.2f}")
        name = f"**{stage}**" if stage == "total" else stage
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| peak RSS (MB) | " + " | ".join(f"{r['rss_mb']:.0f}" for r in results) + " |")
    lines.append(
        "| decision | "
        + " | ".join(f"{r['outcome']}, {r['moves']:,} moves" for r in results)
        + " |"
    )
    lines.append(
        "| audit record (kB) | " + " | ".join(f"{r['audit_kb']:,.0f}" for r in results) + " |"
    )
    lines += ["", *BOUNDS]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 %% only, no docs update")
    parser.add_argument("--one", type=float, help=argparse.SUPPRESS)  # a child's size
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one_size(args.one)))
        return
    results = []
    for scale in QUICK_SCALES if args.quick else SCALES:
        done = subprocess.run(
            [sys.executable, __file__, "--one", str(scale)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            sys.exit(f"bench_cycle: the {scale:.0%} run failed:\n{done.stderr[-4000:]}")
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{scale:.0%}: done", flush=True)
    text = render(results)
    print(text)
    if not args.quick:
        write_section("cycle", text)


if __name__ == "__main__":
    main()
