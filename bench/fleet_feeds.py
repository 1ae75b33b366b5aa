"""The fleet's feeds for bench/bench_fleet_manager.py, in a process of their own (its CPU is not
the manager's): every live broker's agent records as an agent sends them while its broker takes
part in a heal - a sample every ``--stats-interval`` (the busy interval), whole (every replica;
bench/bench_cycle.py's `fleet_stats`, chunked by the agent's own `split_record` at its
`max_record_bytes`) at most every ``--whole-interval`` (the agent's interval), and between
them the moving partitions' only (scope moving, `moving_only`: ``--moving`` partitions of the
broker's taking part in the heal) - keyed by broker id, zstd as the agent sends them, each
broker at its own phase of the interval as independent agents are; and every partition's load
record (key ``topic:partition``, the stream's JSON) once per ``--loads-interval``, paced evenly
across it. ``--whole-interval 0``: every sample whole (the agents before scope moving).

A record's JSON is made once per broker and sent again with the sample's time patched in, so
the feeder keeps its schedule on a shared machine; it prints one JSON line a second: records
and bytes sent, and how far behind its schedule it ran.

Usage: ``python bench/fleet_feeds.py --scale 1.0 --bootstrap HOST:PORT``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cycle import fleet_stats
from confluent_kafka import Producer
from fleet import MB, Fleet, fleet

from agent.config import AgentConfig
from agent.record import split_record
from kmedic import brokerstats as bs

# A time no sample carries (2100-01-01), 13 digits as every time until 2286: patched per send.
PLACEHOLDER = b"4102444800000"


def stats_records(
    f: Fleet, interval_s: float, max_bytes: int, moving: int
) -> list[tuple[bytes, list[bytes], bytes]]:
    """Each live broker's key, its whole record's chunks and its moving record, the sample's
    time a placeholder: ``moving`` of its partitions are in a reassignment adding it."""
    out = []
    for b, stats in fleet_stats(f, int(PLACEHOLDER), interval_s):
        led = [(r.topic, r.partition) for r in stats.leaders]
        held = [*led, *((r.topic, r.partition) for r in stats.followers)][:moving]
        reassigning = [
            bs.ReassigningReplica.model_construct(
                topic=t, partition=p, replicas=[b], adding_replicas=[b], removing_replicas=[]
            )
            for t, p in held
        ]
        stats = stats.model_copy(update={"reassigning": reassigning})
        chunks = [bs.to_json(c) for c in split_record(stats, max_bytes)]
        out.append((str(b).encode(), chunks, bs.to_json(bs.moving_only(stats))))
    return out


def load_record(f: Fleet, i: int, now_ms: int) -> tuple[bytes, bytes]:
    p = f.parts[i]
    doc: dict[str, Any] = {
        "schema_version": 1,
        "topic": p.topic,
        "partition": p.number,
        "window_start_ms": now_ms - 172_800_000,
        "window_end_ms": now_ms,
        "window_s": 172_800.0,
        "slide_s": 3600.0,
        "statistic": "max",
        "samples": 2870,
        "reports": 8610,
        "last_report_ms": now_ms,
        "leader_id": p.leader,
        "bytes_in_per_s": (p.number % 7) * 0.004 * MB,
        "bytes_out_per_s": (p.number % 5) * 0.006 * MB,
        "messages_in_per_s": 100.0,
        "replicas": [
            {"broker_id": b, "role": "leader" if b == p.leader else "follower"} for b in p.replicas
        ],
    }
    return f"{p.topic}:{p.number}".encode(), json.dumps(doc).encode()


def run(args: argparse.Namespace) -> None:
    f = fleet(args.scale)
    max_bytes = AgentConfig.model_fields["max_record_bytes"].default
    records = stats_records(f, args.stats_interval, max_bytes, args.moving)
    producer = Producer(
        {
            "bootstrap.servers": args.bootstrap,
            "compression.type": AgentConfig.model_fields["compression"].default,
            "linger.ms": 20,
            "queue.buffering.max.kbytes": 1 << 20,
            "message.max.bytes": max_bytes + 100_000,
        }
    )
    print(json.dumps({"ready": True, "brokers": len(records), "partitions": len(f.parts)}))
    sys.stdout.flush()
    start = time.monotonic()
    # Each agent at its own phase of the interval; each load at its own place in its interval.
    next_stats = [start + args.stats_interval * i / len(records) for i in range(len(records))]
    whole_at = [float("-inf")] * len(records)
    loads_step = args.loads_interval / max(1, len(f.parts))
    next_load, load_i = start, 0
    sent = {"stats_records": 0, "moving_records": 0, "stats_bytes": 0, "loads": 0, "load_bytes": 0}
    stats_behind = loads_behind = 0.0  # the longest a record was sent after it was due
    report_at = start + 1.0
    while time.monotonic() - start < args.seconds:
        now = time.monotonic()
        now_ms = str(int(time.time() * 1000)).encode()
        for k, due in enumerate(next_stats):
            if due <= now:
                stats_behind = max(stats_behind, now - due)
                key, chunks, light = records[k]
                if now - whole_at[k] >= args.whole_interval:
                    whole_at[k] = now
                else:
                    chunks = [light]
                    sent["moving_records"] += 1
                for chunk in chunks:
                    value = chunk.replace(PLACEHOLDER, now_ms)
                    producer.produce(args.stats_topic, value, key)
                    sent["stats_records"] += 1
                    sent["stats_bytes"] += len(value)
                next_stats[k] = due + args.stats_interval
        batch_end = time.monotonic() + 0.05
        while next_load <= time.monotonic() < batch_end:
            loads_behind = max(loads_behind, time.monotonic() - next_load)
            key, value = load_record(f, load_i, int(time.time() * 1000))
            producer.produce(args.loads_topic, value, key)
            sent["loads"] += 1
            sent["load_bytes"] += len(value)
            load_i = (load_i + 1) % len(f.parts)
            next_load += loads_step
        producer.poll(0)
        if now >= report_at:
            behind = {
                "stats_behind_s": round(stats_behind, 2),
                "loads_behind_s": round(loads_behind, 2),
            }
            print(json.dumps({"t": round(now - start, 1), **sent, **behind}))
            sys.stdout.flush()
            report_at += 1.0
        pause = min(min(next_stats), next_load, report_at) - time.monotonic()
        if pause > 0:
            time.sleep(min(pause, 0.05))
    producer.flush(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--stats-topic", default="kmedic.brokerstats")
    parser.add_argument("--loads-topic", default="kmedic.replica-loads")
    parser.add_argument("--stats-interval", type=float, required=True)
    parser.add_argument("--whole-interval", type=float, required=True)
    parser.add_argument("--moving", type=int, default=18, help="moving partitions a broker")
    parser.add_argument("--loads-interval", type=float, required=True)
    parser.add_argument("--seconds", type=float, default=3600.0)
    run(parser.parse_args())


if __name__ == "__main__":
    main()
