"""What a heal costs the clients: produce latency of a steady ``acks=all`` producer before a
broker's SIGKILL and while kmedic heals it, and the kill-to-fully-replicated time, with no
replication throttle, a fixed rate (40 % of a link), and the adaptive throttle.

The cluster is network-bound (``--nic-mbps``, 40 by default; docs/local-cluster.md): each
broker's link shaped to that rate each way, as a NIC would hold it, so a copy competes with the
clients for bytes per second and a throttle has something to protect. (On plain loopback every
copy is bound by the two cores instead: ``--nic-mbps 0``.) The producer uses ``--link-share``
of each broker's link (30 % by default: at RF 3 on 6 brokers each leader sends a third of the
produce rate to its followers), unless ``--rate`` says otherwise.

The cluster, data and heal are bench_heal.py's (6 brokers on 3 racks, 32 partitions at RF 3,
``--produce-mb`` produced first: 512 MB by default, 1.5 GB on disk; agents and the manager as
processes, grace 15 s, broker 6 killed). Instead of its acks=1 traffic, one producer sends
``--rate`` bytes/s of 1 kB records with ``acks=all`` throughout, at a fixed schedule, to a
topic of its own (48 partitions at RF 3, some on broker 6: the heal copies them too); each
record's latency is librdkafka's own (``produce()`` to acknowledgement). With 48 partitions a
single partition held up for a second is under 1 % of the records: the p99 shows how the
latency spreads, and the records held up for half a second or more are counted apart. Its
records are deleted before each run (DeleteRecords), so every heal copies about the same bytes.

Windows, by when a record was produced: *baseline* the 15 s before the kill (kmedic's agents
and manager running for 10 s already: their start-up is not in it); *heal* from the first
move's start (its audit record) to every partition fully replicated. The seconds between the
kill and the first move are the failure's own cost (the partitions the dead broker led wait
for the controller to fence it and elect new leaders) and the same for every throttle, so they
are counted apart: records that failed, and the worst latency. The settings run in turn
(none, fixed, adaptive, none, ...) so that the data growing from run to run weighs on each
alike; medians over ``--runs`` runs per setting.

Prints the figures and replaces the ``## clients`` section of docs/bench.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_docs import write_section
from bench_heal import GRACE_MS, TOPIC, Race, Run, wait
from confluent_kafka import OFFSET_END, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

CLIENT_TOPIC = "bench.clients"
CLIENT_PARTITIONS = 48
FIXED = 50_000_000  # on loopback; on shaped links, 40 % of a link
SETTINGS: tuple[int | str | None, ...] = (None, FIXED, "adaptive")
RECORD = 1000
BASELINE_S = 15.0
STALL_S = 0.5
SETTLE_S = 25.0  # the pipeline started, before the baseline window begins: no start-up in it


class Latencies:
    """A steady acks=all producer on a fixed schedule; each record's latency (or failure), by
    the wall time it was produced."""

    def __init__(self, bootstrap: str, bytes_per_s: int) -> None:
        self.rate = bytes_per_s / RECORD
        self.delivered: list[tuple[float, float]] = []  # (produced at, latency s)
        self.failed: list[float] = []  # produced at
        self.produced: list[float] = []  # produce() called at
        self.stop = threading.Event()
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5}
            | {"message.timeout.ms": 120_000, "log_level": 0}
        )
        self._thread = threading.Thread(target=self._run, name="latencies", daemon=True)

    def start(self) -> Latencies:
        self._thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self._thread.join(30)
        self._producer.flush(60)

    def _run(self) -> None:
        value = b"c" * RECORD
        started, sent = time.time(), 0
        while not self.stop.is_set():
            due = int((time.time() - started) * self.rate)
            while sent < due:
                at = time.time()
                self.produced.append(at)
                try:
                    self._producer.produce(CLIENT_TOPIC, value, on_delivery=self._delivered(at))
                except BufferError:  # the client's queue is full: the schedule slips, counted
                    self.failed.append(at)
                sent += 1
            self._producer.poll(0.005)

    def _delivered(self, at: float) -> Any:
        def done(err: KafkaError | None, msg: Message) -> None:
            latency = msg.latency()
            if err is not None or latency is None:
                self.failed.append(at)
            else:
                self.delivered.append((at, latency))

        return done

    def answered(self, until: float) -> bool:
        """Whether every record produced before ``until`` was acknowledged or failed."""
        sent = sum(1 for at in list(self.produced) if at < until)
        told = sum(1 for at, _ in list(self.delivered) if at < until)
        return told + sum(1 for at in list(self.failed) if at < until) >= sent

    def window(self, start: float, end: float) -> tuple[list[float], int]:
        """Latencies of the records produced in [start, end), and how many failed."""
        got = [lat for at, lat in list(self.delivered) if start <= at < end]
        return got, sum(1 for at in list(self.failed) if start <= at < end)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


@dataclass
class Result:
    setting: int | str | None
    heal: Run
    base_p50: float
    base_p99: float
    heal_p50: float
    heal_p95: float
    heal_p99: float
    heal_stalled: int  # records of the heal window that waited STALL_S or more
    heal_records: int
    heal_failed: int
    failure_failed: int  # records failed between the kill and the first move
    failure_max: float  # their worst latency (s)


def client_topic(race: Race, partitions: int) -> None:
    topic = NewTopic(CLIENT_TOPIC, partitions, 3)
    for future in race.admin.create_topics([topic]).values():
        future.result(timeout=60)
    wait(lambda: CLIENT_TOPIC in race.admin.list_topics(timeout=10).topics, 60, "the topic")


def trim(race: Race) -> None:
    """The client topic's records so far deleted: each heal copies only the last minute's."""
    count = len(race.admin.list_topics(CLIENT_TOPIC, timeout=10).topics[CLIENT_TOPIC].partitions)
    partitions = [TopicPartition(CLIENT_TOPIC, p, OFFSET_END) for p in range(count)]
    for future in race.admin.delete_records(partitions).values():
        future.result(timeout=60)


def measure(
    race: Race,
    lat: Latencies,
    n: int,
    setting: int | str | None,
    init: Any,
    settle_s: float = SETTLE_S,
) -> Result:
    trim(race)
    run = race.race(n, setting, init, settle_s=settle_s)
    kill = run.killed_at
    first, replicated = kill + run.first_move_s, kill + run.replicated_s
    wait(lambda: lat.answered(replicated), 150, "the heal window's records answered")
    base, _ = lat.window(kill - min(BASELINE_S, settle_s), kill)
    heal, heal_failed = lat.window(first, replicated)
    failure, failure_failed = lat.window(kill, first)
    result = Result(
        setting,
        run,
        pct(base, 0.5),
        pct(base, 0.99),
        pct(heal, 0.5),
        pct(heal, 0.95),
        pct(heal, 0.99),
        sum(1 for x in heal if x >= STALL_S),
        len(heal),
        heal_failed,
        failure_failed,
        max(failure, default=float("nan")),
    )
    print(
        f"  {label(setting)}: p50/p99 {result.base_p50 * 1e3:.1f}/{result.base_p99 * 1e3:.1f} "
        f"ms before, {result.heal_p50 * 1e3:.1f}/{result.heal_p99 * 1e3:.1f} ms during the "
        f"heal ({len(heal)} records, {heal_failed} failed); fully replicated "
        f"{run.replicated_s:.1f} s after the kill",
        flush=True,
    )
    for summary in run.rate_records[:3]:
        print(f"    {summary}", flush=True)
    return result


def label(setting: int | str | None) -> str:
    if setting is None:
        return "none"
    return setting if isinstance(setting, str) else f"{setting / 1e6:.0f} MB/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per throttle setting")
    parser.add_argument("--produce-mb", type=int, default=512, help="MB produced at RF 3")
    parser.add_argument("--rate", type=int, default=None, help="acks=all bytes/s")
    parser.add_argument(
        "--nic-mbps", type=int, default=40, help="each broker's link, Mbit/s (0: loopback)"
    )
    parser.add_argument(
        "--link-share", type=float, default=0.3, help="of each link the producer uses"
    )
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke size: one adaptive run, 4 MB, 200 kB/s, a 5 s grace, docs untouched",
    )
    args = parser.parse_args()
    settings, args.grace_ms, settle_s = SETTINGS, GRACE_MS, SETTLE_S
    partitions = CLIENT_PARTITIONS
    link = args.nic_mbps * 1_000_000 // 8
    if args.rate is None:  # each leader sends a third of it to its followers (RF 3, 6 brokers)
        args.rate = int(args.link_share * link * 3) if link else 2_000_000
    if link:
        settings = (None, int(0.4 * link), "adaptive")
    if args.quick:
        args.produce_mb, args.runs, args.no_write, args.grace_ms = 4, 1, True, 5_000
        settings, settle_s, partitions, args.rate = ("adaptive",), 3.0, 6, 200_000
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as tmp:
        race = Race(Path(tmp), args.produce_mb, args.grace_ms, nic_mbps=args.nic_mbps or None)
        lat: Latencies | None = None
        try:
            t = time.monotonic()
            race.fill()
            print(f"produced {args.produce_mb} MB in {time.monotonic() - t:.0f} s", flush=True)
            client_topic(race, partitions)
            initial = race.placement()
            on_disk = sum(race.sizes()[k] * len(v) for k, v in initial.items() if k[0] == TOPIC)
            lat = Latencies(race.bootstrap, args.rate).start()
            results = [
                measure(race, lat, n * len(settings) + i, setting, initial, settle_s)
                for n in range(args.runs)
                for i, setting in enumerate(settings)
            ]
        finally:
            if lat is not None:
                lat.close()
            race.stop()
    text = report(args, on_disk, results)
    print(text)
    if not args.no_write:
        write_section("clients", text)


def report(args: argparse.Namespace, on_disk: int, results: list[Result]) -> str:
    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1e3:.1f} ms"

    rows, medians = [], {}
    for setting in dict.fromkeys(r.setting for r in results):
        mine = [r for r in results if r.setting == setting]
        if not mine:
            continue
        heal_s = statistics.median(r.heal.replicated_s for r in mine)
        ratio = statistics.median(r.heal_p99 / r.base_p99 for r in mine)
        medians[setting] = (heal_s, ratio)
        rows.append(
            f"| {label(setting)} | {ms([r.base_p50 for r in mine])} / "
            f"{ms([r.base_p99 for r in mine])} | {ms([r.heal_p50 for r in mine])} / "
            f"{ms([r.heal_p99 for r in mine])} | {ms([r.heal_p95 for r in mine])} | "
            f"{ratio:.2f}× | {statistics.median(r.heal_stalled for r in mine):.0f} of "
            f"{statistics.median(r.heal_records for r in mine):.0f} | "
            f"{sum(r.heal_failed for r in mine)} | {heal_s:.1f} s "
            f"({min(r.heal.replicated_s for r in mine):.1f}-"
            f"{max(r.heal.replicated_s for r in mine):.1f}) | "
            f"{max(r.failure_failed for r in mine)} / "
            f"{max(r.failure_max for r in mine):.1f} s |"
        )
    unthrottled = medians.get(None, (float("nan"), 0.0))[0]
    adaptive_heal, adaptive_ratio = medians["adaptive"]
    return "\n".join(
        [
            "## clients",
            "",
            "`bench/bench_clients.py`: what a heal costs the clients. bench_heal's cluster and "
            f"heal ({args.produce_mb} MB produced, {on_disk / 1e9:.2f} GB on disk, broker 6 "
            f"SIGKILLed, grace {args.grace_ms / 1000:.0f} s) under one steady acks=all producer "
            f"({args.rate / 1e6:.2f} MB/s of 1 kB records on a fixed schedule; latency is "
            "librdkafka's, produce() to acknowledgement). Baseline: records produced in the "
            f"{BASELINE_S:.0f} s before the kill (kmedic running for "
            f"{SETTLE_S - BASELINE_S:.0f} s already); heal: from the first move to fully "
            "replicated. The producer writes to a 48-partition topic of its own whose records "
            "are deleted before each run, so the heals copy the same data. Kill to first "
            "move (fencing, elections, the grace) is the failure's "
            "own cost, the same for every setting: its failed records and worst latency are "
            f"shown apart. {args.runs} runs per setting, taken in turn; medians. Machine: "
            f"{os.cpu_count()} cores shared by 6 brokers, a controller, ZooKeeper, 6 agents, "
            f"the manager and the producer; one disk; {network(args)}.",
            "",
            "| throttle | before p50 / p99 | heal p50 / p99 | heal p95 | heal p99 ÷ before p99 "
            f"| heal records ≥ {STALL_S:g} s | failed during the heal | kill to fully "
            "replicated | kill to first move: failed / worst |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            f"Adaptive against the goals: heal p99 {adaptive_ratio:.2f}× the baseline (goal "
            f"≤ 1.5×), heal {adaptive_heal / unthrottled:.2f}× the unthrottled time (goal "
            "≤ 1.3×).",
            "",
        ]
    )


def network(args: argparse.Namespace) -> str:
    if not args.nic_mbps:
        return (
            "loopback network (no NIC limit: the adaptive throttle's capacity is the default "
            "125 MB/s per broker and direction)"
        )
    return (
        f"each broker's link shaped to {args.nic_mbps} Mbit/s "
        f"({args.nic_mbps / 8:.1f} MB/s) each way in the cluster's own network namespace "
        "(docs/local-cluster.md), which its agents report as their brokers' NIC speed"
    )


if __name__ == "__main__":
    main()
