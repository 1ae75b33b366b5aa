"""Agent benchmark: CPU cost and record size of one sample of a broker with many partitions.

A synthetic JMX exporter page (in the exact format the broker's exporter writes) and a synthetic
Admin API view describe a broker hosting N partitions (a third as leader). One sample is:
parse the page, estimate the per-partition rates against the previous scrape, assemble the
record, split it into chunks and serialise them: everything the agent does per interval
except network I/O. CPU time is process time (user + system) of that work.

Prints the figures and replaces the ``## agent`` section of docs/bench.md.
Usage: .venv/bin/python bench/bench_agent.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_docs import write_section  # noqa: E402

from agent.admin import AdminView  # noqa: E402
from agent.exporter import PageParser  # noqa: E402
from agent.record import Header, full_record, split_record  # noqa: E402
from kmedic import brokerstats as bs  # noqa: E402
from kmedic.metadata import BrokerNode, PartitionInfo  # noqa: E402

BROKER = 1
PARTITIONS_PER_TOPIC = 40
OTHER_METERS = (
    "bytesrejectedpersec",
    "failedfetchrequestspersec",
    "failedproducerequestspersec",
    "totalfetchrequestspersec",
    "totalproducerequestspersec",
    "producemessageconversionspersec",
    "fetchmessageconversionspersec",
)


def topic_names(partitions: int) -> list[str]:
    return [f"service-{i:04d}.events.v1" for i in range(partitions // PARTITIONS_PER_TOPIC)]


def leads(index: int) -> bool:
    return index % 3 == 0


def exporter_page(partitions: int, step: int) -> str:
    """The page after ``step`` intervals of traffic (each partition grows at its own rate)."""
    topics = topic_names(partitions)
    lines: list[str] = []

    def family(name: str, kind: str, samples: list[str]) -> None:
        lines.append(f"# HELP {name} {name}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(samples)

    grow = {(t, p): (p + 1) * 1000 * step for t in topics for p in range(PARTITIONS_PER_TOPIC)}
    for meter, per in (("bytesinpersec", 1), ("bytesoutpersec", 2), ("messagesinpersec", 0.01)):
        name = f"kafka_server_brokertopicmetrics_{meter}_total"
        per_topic = {
            t: sum(grow[(t, p)] * per for p in range(PARTITIONS_PER_TOPIC) if leads(p))
            for t in topics
        }
        samples = [f"{name} {sum(per_topic.values()):.1f}"]
        samples += [f'{name}{{topic="{t}"}} {v:.1f}' for t, v in per_topic.items()]
        family(name, "counter", samples)
    for meter in OTHER_METERS:
        name = f"kafka_server_brokertopicmetrics_{meter}_total"
        family(name, "counter", [f"{name} 0.0"] + [f'{name}{{topic="{t}"}} 0.0' for t in topics])
    for gauge in ("logendoffset", "logstartoffset", "numlogsegments", "size"):
        name = f"kafka_log_log_{gauge}"
        samples = []
        for t in topics:
            for p in range(PARTITIONS_PER_TOPIC):
                size = 10_000_000 + grow[(t, p)]
                value = {
                    "logendoffset": size // 100,
                    "logstartoffset": 0,
                    "numlogsegments": 3,
                    "size": size,
                }[gauge]
                samples.append(f'{name}{{partition="{p}",topic="{t}"}} {float(value)}')
        family(name, "gauge", samples)
    for name in ("underreplicatedpartitions", "partitioncount", "leadercount"):
        full = f"kafka_server_replicamanager_{name}"
        family(full, "gauge", [f"{full} 0.0"])
    family("jvm_threads_current", "gauge", ["jvm_threads_current 80.0"])
    return "\n".join(lines) + "\n"


def admin_view(partitions: int) -> AdminView:
    parts = []
    for t in topic_names(partitions):
        for p in range(PARTITIONS_PER_TOPIC):
            other = 2 + p % 29
            third = 2 + (p + 7) % 29
            leader = BROKER if leads(p) else other
            replicas = (BROKER, other, third) if leads(p) else (other, BROKER, third)
            parts.append(PartitionInfo(t, p, leader, replicas, replicas))
    return AdminView(BrokerNode("broker-1", 9092, "/r1", False), parts, {}, None, "4.1")


def one_sample(
    prev_page: str, page: str, view: AdminView, *, warm: bool = True
) -> tuple[float, list[bs.BrokerStats]]:
    parser = PageParser()
    prev = parser.parse(prev_page, 0.0)  # the previous interval's scrape: not timed
    if not warm:
        parser = PageParser()  # first scrape after start: every line parsed
    dirs = [
        bs.LogDir(
            path="/data", total_bytes=10**13, free_bytes=4 * 10**12, replica_bytes=None, error=None
        )
    ]
    header = Header("bench", BROKER, "broker-1", "/r1", 1_700_000_000_000, 60.0, "bench", "4.1")
    gc.collect()
    start = time.process_time()
    cur = parser.parse(page, 60.0)
    record = full_record(header, prev, cur, view, dirs)
    chunks = split_record(record, 900_000)
    for chunk in chunks:
        bs.to_json(chunk)
    return time.process_time() - start, chunks


def bench(partitions: int, repeats: int) -> dict[str, float]:
    prev_page, page = exporter_page(partitions, 1), exporter_page(partitions, 2)
    view = admin_view(partitions)
    cpu = []
    chunks: list[bs.BrokerStats] = []
    for _ in range(repeats):
        seconds, chunks = one_sample(prev_page, page, view)
        cpu.append(seconds)
    cold = [one_sample(prev_page, page, view, warm=False)[0] for _ in range(max(1, repeats // 2))]
    encoded = [bs.to_json(c) for c in chunks]
    return {
        "partitions": partitions,
        "page_kb": len(page.encode()) / 1000,
        "cpu_median_s": statistics.median(cpu),
        "cpu_max_s": max(cpu),
        "cpu_cold_s": statistics.median(cold),
        "chunks": len(chunks),
        "json_kb": sum(len(e) for e in encoded) / 1000,
        "largest_chunk_kb": max(len(e) for e in encoded) / 1000,
        "gzip_kb": sum(len(zlib.compress(e, 6)) for e in encoded) / 1000,
    }


def render(results: list[dict[str, float]], repeats: int) -> str:
    lines = [
        "## agent",
        "",
        "`bench/bench_agent.py`: one sample of a broker hosting N partitions (a third as leader,",
        "40 partitions per topic, replication factor 3), from a synthetic JMX exporter page in",
        "the broker exporter's format: parse, per-partition estimate, record assembly, chunking",
        f"and JSON serialisation. CPU is process time, median and max of {repeats} runs; network",
        "I/O (the scrape, the Admin API calls, the produce) is not included. Worst case: every",
        "partition grew since the previous scrape, so only the start-offset lines come from the",
        "parser's cache of unchanged lines; the cold column is the first sample after start",
        "(nothing cached). The partitions' log gauges are read with one regular expression",
        "each and other plain lines with two (`agent/exporter.py`); only lines with escapes or",
        "timestamps go to prometheus-client's parser, which cost 0.34 s per sample at 10,000",
        "partitions when it read every line (0.5-0.7 s from its 0.22 on). Chunks are cut at",
        "900,000 bytes before compression (`max_record_bytes`); the gzip figure (zlib level 6)",
        "indicates what compression saves on the wire (the agent itself uses zstd); synthetic",
        "records are repetitive, real ones compress less.",
        "",
        "| partitions | exporter page (kB) | CPU median (s) | CPU max (s) | CPU cold (s) "
        "| chunks | record JSON (kB) | largest chunk (kB) | gzip'd (kB) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r['partitions']:,.0f} | {r['page_kb']:,.0f} | {r['cpu_median_s']:.3f} "
            f"| {r['cpu_max_s']:.3f} | {r['cpu_cold_s']:.3f} | {r['chunks']:.0f} "
            f"| {r['json_kb']:,.0f} "
            f"| {r['largest_chunk_kb']:,.0f} | {r['gzip_kb']:,.0f} |"
        )
    lines.append("")
    lines.append("Target: at most 0.2 s of CPU per sample at 10,000 partitions.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, docs untouched")
    args = parser.parse_args()
    sizes = [1_000] if args.quick else [1_000, 10_000, 20_000]
    repeats = 3 if args.quick else 7
    results = [bench(n, repeats) for n in sizes]
    text = render(results, repeats)
    print(text)
    if not args.quick:
        write_section("agent", text)


if __name__ == "__main__":
    main()
