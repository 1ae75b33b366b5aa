"""What a heal costs the clients: produce latency of a steady ``acks=all`` producer before a
broker's SIGKILL and while kmedic heals it, and the kill-to-fully-replicated time, with no
replication throttle, a fixed rate (40 % of a link), and the adaptive throttle.

The cluster is network-bound (``--nic-mbps``, 40 by default; docs/local-cluster.md): each
broker's link shaped to that rate each way, as a NIC would hold it, so a copy competes with the
clients for bytes per second and a throttle has something to protect. (On plain loopback every
copy is bound by the two cores instead: ``--nic-mbps 0``.) The producer's traffic uses
``--link-share`` of each broker's link in its busier direction (30 % by default: at RF 3 on 6
brokers each broker receives half the produce rate, its leaders' writes and the copies it
follows), unless ``--rate`` says otherwise; after the heal the dead broker's rack-mate receives
twice that. Replica fetches are cut to ``--fetch-kb`` (``fetch_sizes``).

The cluster, data and heal are bench_heal.py's (6 brokers on 3 racks, 32 partitions at RF 3,
``--produce-mb`` produced first: 512 MB by default, 1.5 GB on disk; agents and the manager as
processes, grace 15 s, broker 6 killed). Instead of its acks=1 traffic, one producer sends
``--rate`` bytes/s of 1 kB records with ``acks=all`` throughout, at a fixed schedule, to a
topic of its own (48 partitions at RF 3, some on broker 6: the heal copies them too); each
record's latency is librdkafka's own (``produce()`` to acknowledgement). With 48 partitions a
single partition held up for a second is under 1 % of the records: the p99 shows how the
latency spreads, and the records held up for half a second or more are counted apart. Its
records are deleted before each run (DeleteRecords), so every heal copies about the same bytes.

Windows, by when a record was produced: *baseline* the minute before the kill (kmedic's agents
and manager running for 10 s already: their start-up is not in it); *heal* from the first
move's start (its audit record) to every partition fully replicated; *after* the healed
cluster, from 5 to 30 s after that (kmedic still running). The seconds between the
kill and the first move are the failure's own cost (the partitions the dead broker led wait
for the controller to fence it and elect new leaders) and the same for every throttle, so they
are counted apart: records that failed, and the worst latency. The settings run in turn
(none, fixed, adaptive, none, ...) so that the data growing from run to run weighs on each
alike; medians over ``--runs`` runs per setting.

``--scenario rejoin`` measures a broker's return instead of a heal (bench/client_rejoin.py):
broker 6 away for ``--away-s`` under a long grace, then back, catching up what it missed;
the *catch-up* window runs from its restart to every partition in sync.

``--scenario load`` kills nothing and runs no kmedic (bench/client_load.py): the healed
broker's incoming link filled step by step (``--levels``) with plain replication, the
smoothest copy there is, and the clients' latency read at each step: the least a heal that
keeps that link so full costs them, whatever its throttle.

``--timeline`` prints, beside each run's figures, its seconds in 5 s buckets: each broker's
link bytes each way (its tc classes), the reassignments in flight and the producer's latency
(bench/timeline.py): whether a copy ran at its rate, and when the clients waited.
``--executor KEY=VALUE`` runs the manager with an executor setting of its own (a limit, the
adaptive rule's figures), so a rule is measured before it becomes a default; ``--broker
KEY=VALUE`` starts every broker with a config of its own (Kafka's replication quota window,
say), so a broker setting is measured before it is recommended.

Prints the figures and replaces the ``## clients`` (or ``## clients: rejoin``) section of
docs/bench.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import as_shipped
import client_load
from bench_docs import write_section
from bench_heal import (
    GRACE_MS,
    JVM_WORDS,
    TOPIC,
    Race,
    Run,
    add_jvm_argument,
    end_on_sigterm,
    wait,
)
from client_rejoin import NO_AUTO_REBALANCE, Rejoin, rejoin
from confluent_kafka import OFFSET_END, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]
from timeline import Timeline, pct

from kmedic.localcluster import netns

CLIENT_TOPIC = "bench.clients"
CLIENT_PARTITIONS = 48
FIXED = 50_000_000  # on loopback; on shaped links, 40 % of a link
FETCH_KB = 4  # a shaped link's replica fetch size: Kafka's 1 MB on 10 Gbit/s (fetch_sizes)
BROKERS, RF = 6, 3
RECORD = 1000
# The steady cluster's window before the kill: a minute, since 15 s held too few records for
# a p99 to trust (one partition held up for 200 ms is over 1 % of them: 20-62 ms from run to
# run of the same cluster, 2026-12-01).
BASELINE_S = 60.0
STALL_S = 0.5
AFTER_S = 30.0  # the healed cluster's steady state: the *after* window
AFTER_SKIP_S = 5.0  # its first seconds (the last move's throttles cleared) left out
SETTLE_S = 70.0  # the pipeline started, before the baseline window begins: no start-up in it
# The producer's first seconds (the brokers' new segments, their JIT, the client's metadata):
# measured, the first run's baseline p99 was 4 to 20 times the later runs'.
WARM_UP_S = 60.0


# The clients' producer: acks=all with at most 5 requests in flight per broker, as Kafka's own
# producer sends by default since 3.0, so while they wait its batches grow. (librdkafka without
# a cap sends every batch as it is ready, up to a million requests in flight on one connection,
# while a broker reads a connection's next request only once it has answered the last: the
# latency then measures that queue of tiny requests, not the replication.) Not idempotent:
# librdkafka's idempotent producer burns CPU while its requests wait (measured at a full
# 10 Mbit/s link: 15.6 CPU-seconds in 30 s at 750 records a second, against 1.5 with the same
# cap and no idempotence), and on two cores shared with the brokers that CPU is the latency it
# measures: the slower the cluster, the more the client took from it (docs/bench.md). A real
# client runs on a host of its own; the cap is what shapes its requests, and latency is not
# what idempotence changes.
CLIENT_PRODUCER: dict[str, str | int | bool] = {
    "acks": "all",
    "linger.ms": 5,
    "max.in.flight.requests.per.connection": 5,
    "enable.idempotence": False,
    "message.timeout.ms": 120_000,
}


class Latencies:
    """A steady acks=all producer on a fixed schedule (``CLIENT_PRODUCER``); each record's
    latency (or failure), by the wall time it was produced."""

    def __init__(self, bootstrap: str, bytes_per_s: int) -> None:
        self.rate = bytes_per_s / RECORD
        # (produced at, latency s, the partition it went to)
        self.delivered: list[tuple[float, float, int]] = []
        self.failed: list[float] = []  # produced at
        self.produced: list[float] = []  # produce() called at
        self.stop = threading.Event()
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "log_level": 0} | CLIENT_PRODUCER
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
                self.delivered.append((at, latency, msg.partition() or 0))

        return done

    def answered(self, until: float) -> bool:
        """Whether every record produced before ``until`` was acknowledged or failed."""
        sent = sum(1 for at in list(self.produced) if at < until)
        told = sum(1 for at, _, _ in list(self.delivered) if at < until)
        return told + sum(1 for at in list(self.failed) if at < until) >= sent

    def dump(self, path: Path) -> None:
        """Every record's wall time, partition and latency (ms; empty: failed), as CSV:
        which partitions waited, and when, beside the brokers' logs (``--keep``)."""
        path.write_text(latency_csv(list(self.delivered), list(self.failed)))

    def window(self, start: float, end: float) -> tuple[list[float], int]:
        """Latencies of the records produced in [start, end), and how many failed."""
        got = [lat for at, lat, _ in list(self.delivered) if start <= at < end]
        return got, sum(1 for at in list(self.failed) if start <= at < end)


def latency_csv(delivered: list[tuple[float, float, int]], failed: list[float]) -> str:
    """``produced_at,partition,latency_ms`` rows in the order produced; a failed record's
    partition and latency are empty."""
    rows = [(at, str(part), f"{lat * 1e3:.1f}") for at, lat, part in delivered]
    rows += [(at, "", "") for at in failed]
    rows.sort()
    return "produced_at,partition,latency_ms\n" + "".join(
        f"{at:.3f},{part},{lat}\n" for at, part, lat in rows
    )


def drops(race: Race) -> int:
    """Packets the shaped links dropped so far (their queues full), both directions: a drop
    costs a TCP retransmission, hundreds of milliseconds on loopback."""
    namespace = race.cluster.namespace
    if namespace is None:
        return 0
    total = 0
    for device in ("lo", netns.IFB):
        shown = subprocess.run(
            ["tc", "-n", namespace.name, "-s", "qdisc", "show", "dev", device],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        total += root_drops(shown)
    return total


def root_drops(shown: str) -> int:
    """The packets a device's root HTB qdisc dropped, from ``tc -s qdisc show``: ``1:`` on lo
    (egress), ``2:`` on the IFB device (ingress)."""
    root = re.search(r"qdisc htb \d+: root.*?dropped (\d+)", shown, re.DOTALL)
    return int(root.group(1)) if root else 0


def fetch_sizes(kb: int, answer_kb: int | None = None) -> dict[str, str]:
    """The brokers' replica fetch sizes: how many bytes of one partition (and of all) a
    follower's fetch carries. A 1 MB chunk (Kafka's default) holds a 10 Gbit/s NIC for under a
    millisecond, but a 40 Mbit/s link for 200 ms, in front of every acks=all write replicated
    through it; scaled to the shaped link's speed, the chunk is what it is beside a real NIC.
    A 10 Gbit/s NIC's 1 MB scaled down to 40 Mbit/s is 4 kB (0.8 ms on either): the default
    since 2026-11-28 (64 kB before, 13 ms a chunk: docs/bench.md says what it changed).
    ``answer_kb``: a whole answer's size (all its partitions), ``kb`` by default.
    0: Kafka's own. Static in Kafka (read-only while a broker runs)."""
    if not kb:
        return {}
    return {
        "replica.fetch.max.bytes": str(kb * 1024),
        "replica.fetch.response.max.bytes": str((answer_kb or kb) * 1024),
    }


@dataclass
class Result:
    setting: int | str | None
    heal: Run
    base_p50: float
    base_p99: float
    heal_p50: float
    heal_p95: float
    heal_p99: float
    after_p50: float  # the healed cluster (AFTER_SKIP_S to AFTER_S after fully replicated)
    after_p99: float
    heal_stalled: int  # records of the heal window that waited STALL_S or more
    heal_records: int
    heal_failed: int
    failure_failed: int  # records failed between the kill and the first move
    failure_max: float  # their worst latency (s)
    dropped: int  # packets the shaped links dropped during the run
    base_p999: float = float("nan")
    heal_p999: float = float("nan")


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
    last: bool = False,
    timeline: Timeline | None = None,
    after_s: float = AFTER_S,
) -> Result:
    trim(race)
    dropped = drops(race)
    begun = time.time()
    try:
        run = race.race(n, setting, init, settle_s=settle_s, put_back=not last, after_s=after_s)
    except SystemExit:  # a heal that timed out: its seconds are what tell why
        if timeline is not None:
            for line in timeline.report(begun, time.time(), lambda a, b: lat.window(a, b)[0]):
                print(f"    {line}", flush=True)
        raise
    dropped = drops(race) - dropped
    kill = run.killed_at
    first, replicated = kill + run.first_move_s, kill + run.replicated_s
    healed = replicated + after_s
    wait(lambda: lat.answered(healed), 150, "the heal window's records answered")
    base, _ = lat.window(kill - min(BASELINE_S, settle_s), kill)
    heal, heal_failed = lat.window(first, replicated)
    after, _ = lat.window(replicated + min(AFTER_SKIP_S, after_s / 2), healed)
    failure, failure_failed = lat.window(kill, first)
    result = Result(
        setting,
        run,
        pct(base, 0.5),
        pct(base, 0.99),
        pct(heal, 0.5),
        pct(heal, 0.95),
        pct(heal, 0.99),
        pct(after, 0.5),
        pct(after, 0.99),
        sum(1 for x in heal if x >= STALL_S),
        len(heal),
        heal_failed,
        failure_failed,
        max(failure, default=float("nan")),
        dropped,
        base_p999=pct(base, 0.999),
        heal_p999=pct(heal, 0.999),
    )
    print(
        f"  {label(setting)}: p50/p99 {result.base_p50 * 1e3:.1f}/{result.base_p99 * 1e3:.1f} "
        f"ms before, {result.heal_p50 * 1e3:.1f}/{result.heal_p99 * 1e3:.1f} ms during the "
        f"heal ({len(heal)} records, {heal_failed} failed), "
        f"{result.after_p50 * 1e3:.1f}/{result.after_p99 * 1e3:.1f} ms after; fully replicated "
        f"{run.replicated_s:.1f} s after the kill; {dropped} packets dropped",
        flush=True,
    )
    print(
        f"    windows (wall clock, s): kill {kill:.3f}, first move {first:.3f}, fully "
        f"replicated {replicated:.3f}",
        flush=True,
    )
    for summary in run.rate_records[:3]:
        print(f"    {summary}", flush=True)
    if timeline is not None:
        for line in timeline.report(kill - 10, healed, lambda a, b: lat.window(a, b)[0]):
            print(f"    {line}", flush=True)
    return result


@dataclass
class RejoinResult:
    run: Rejoin
    base_p50: float
    base_p99: float
    p50: float
    p95: float
    p99: float
    stalled: int  # records of the catch-up window that waited STALL_S or more
    records: int
    failed: int
    dropped: int


def measure_rejoin(
    race: Race, lat: Latencies, n: int, setting: int | str | None, away_s: float, settle_s: float
) -> RejoinResult:
    trim(race)
    dropped = drops(race)
    run = rejoin(race, n, setting, away_s, settle_s)
    dropped = drops(race) - dropped
    wait(lambda: lat.answered(run.caught_up_at), 150, "the catch-up's records answered")
    base, _ = lat.window(run.killed_at - BASELINE_S, run.killed_at)
    during, failed = lat.window(run.restarted_at, run.caught_up_at)
    result = RejoinResult(
        run,
        pct(base, 0.5),
        pct(base, 0.99),
        pct(during, 0.5),
        pct(during, 0.95),
        pct(during, 0.99),
        sum(1 for x in during if x >= STALL_S),
        len(during),
        failed,
        dropped,
    )
    print(
        f"  rejoin, {label(setting)}: p50/p99 {result.base_p50 * 1e3:.1f}/"
        f"{result.base_p99 * 1e3:.1f} ms before, {result.p50 * 1e3:.1f}/{result.p99 * 1e3:.1f} "
        f"ms during the catch-up ({len(during)} records, {failed} failed); caught up "
        f"{run.catch_up_s:.1f} s after the restart; {dropped} packets dropped",
        flush=True,
    )
    for summary in run.armed[:2] + run.rate_records[:3]:
        print(f"    {summary}", flush=True)
    return result


def report_rejoin(args: argparse.Namespace, results: list[RejoinResult]) -> str:
    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1e3:.1f} ms"

    rows, medians = [], {}
    for setting in dict.fromkeys(r.run.setting for r in results):
        mine = [r for r in results if r.run.setting == setting]
        took = statistics.median(r.run.catch_up_s for r in mine)
        ratio = statistics.median(r.p99 / r.base_p99 for r in mine)
        medians[setting] = (took, ratio)
        rows.append(
            f"| {label(setting)} | {ms([r.base_p50 for r in mine])} / "
            f"{ms([r.base_p99 for r in mine])} | {ms([r.p50 for r in mine])} / "
            f"{ms([r.p99 for r in mine])} | {ms([r.p95 for r in mine])} | {ratio:.2f}× | "
            f"{statistics.median(r.stalled for r in mine):.0f} of "
            f"{statistics.median(r.records for r in mine):.0f} | "
            f"{sum(r.failed for r in mine)} | {took:.1f} s "
            f"({min(r.run.catch_up_s for r in mine):.1f}-"
            f"{max(r.run.catch_up_s for r in mine):.1f}) | "
            f"{statistics.median(r.dropped for r in mine):.0f} |"
        )
    unthrottled = medians.get(None, (float("nan"), 0.0))[0]
    adaptive_s, adaptive_ratio = medians.get("adaptive", (float("nan"), float("nan")))
    return "\n".join(
        [
            "## clients: rejoin",
            "",
            as_shipped.header(args, broker_settings(args.broker), modelling(args)),
            "",
            "`bench/bench_clients.py --scenario rejoin`: what a broker's return costs the "
            f"clients. The same cluster and producer ({args.rate / 1e6:.2f} MB/s acks=all); "
            f"broker 6 SIGKILLed and away for {args.away_s:.0f} s under an hour's grace "
            "(nothing healed), then started again: it fetches what it missed. Kafka's own "
            "leader rebalancing is off: kmedic hands its leadership back. Baseline: the "
            f"{BASELINE_S:.0f} s before the kill; catch-up: from the restart to every "
            "partition in sync and broker 6 leading its preferred partitions again (the "
            "broker's own start is in it, the same for every setting). "
            f"{args.runs} runs per setting, taken in turn; medians. "
            f"Machine: {os.cpu_count()} cores; {network(args)}{settings_used(args)}.",
            "",
            "| throttle | before p50 / p99 | catch-up p50 / p99 | catch-up p95 | catch-up p99 ÷ "
            f"before p99 | records ≥ {STALL_S:g} s | failed | restart to in sync and leading "
            "| packets dropped |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            f"Adaptive against the goal: catch-up p99 {adaptive_ratio:.2f}× the baseline (goal "
            f"≤ 1.5×), catch-up {adaptive_s / unthrottled:.2f}× the unthrottled time.",
            "",
        ]
    )


def executor_settings(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as the manager's ``executor:`` section: a dotted key nests
    (``adaptive.ratio=0.5``), a value is JSON where it parses and a string otherwise."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"{pair!r} is not KEY=VALUE")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        *path, last = key.split(".")
        node = out
        for part in path:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ValueError(f"{key!r}: {part!r} is set as a value already")
        node[last] = value
    return out


def broker_settings(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` pairs as broker configs (Kafka's properties: every value a string)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"{pair!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def label(setting: int | str | None) -> str:
    if setting is None:
        return "none"
    return setting if isinstance(setting, str) else f"fixed {setting / 1e6:g} MB/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    end_on_sigterm()
    parser.add_argument("--runs", type=int, default=3, help="runs per throttle setting")
    parser.add_argument(
        "--produce-mb",
        type=int,
        default=2048,
        help="MB produced at RF 3 (2048: 1 GB on each of the 6 brokers)",
    )
    parser.add_argument("--rate", type=int, default=None, help="acks=all bytes/s")
    parser.add_argument(
        "--nic-mbps", type=int, default=40, help="each broker's link, Mbit/s (0: loopback)"
    )
    parser.add_argument(
        "--link-share",
        type=float,
        default=0.3,
        help="of each broker's link in the producer's traffic (its busier direction, in)",
    )
    parser.add_argument(
        "--settings",
        default="none,fixed,adaptive",
        help="throttle settings to run, comma-separated: none, fixed (40 %% of a link), "
        "adaptive, or a fixed rate in bytes/s",
    )
    parser.add_argument(
        "--fetch-kb",
        type=int,
        default=None,
        help="the brokers' replica fetch sizes and the preload's batches, kB (default: 4 on "
        "a shaped link, Kafka's own on loopback)",
    )
    parser.add_argument(
        "--answer-kb",
        type=int,
        default=None,
        help="a replica fetch's whole answer, kB (default: --fetch-kb)",
    )
    parser.add_argument(
        "--scenario",
        choices=("heal", "rejoin", "load"),
        default="heal",
        help="heal: broker 6 killed and healed; rejoin: broker 6 away --away-s, then back; "
        "load: broker 3's link filled by plain replication, step by step (--levels)",
    )
    parser.add_argument(
        "--levels",
        default="0.5,0.62,0.75,0.85,0.95",
        help="load: the shares of broker 3's link to fill, in turn, after the clients alone",
    )
    parser.add_argument(
        "--away-s", type=float, default=60.0, help="rejoin: how long broker 6 stays away"
    )
    as_shipped.add_arguments(parser)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--executor",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a manager executor setting for every run (repeatable; a dotted key sets a "
        "nested one, the value read as JSON): max_moves_per_broker=1, adaptive.ratio=0.5",
    )
    parser.add_argument(
        "--broker",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker config for every broker (repeatable): replication.quota.window.num=2",
    )
    add_jvm_argument(parser, default="light")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="run in DIR and keep it: every role's log (the manager's cycles and moves) and "
        "every record's partition and latency (latencies.csv)",
    )
    parser.add_argument(
        "--timeline",
        action="store_true",
        help="print each run's links, moves in flight and latency, 5 s at a time (shaped only)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke size: one adaptive run, 4 MB, 200 kB/s, a 5 s grace, a timeline, docs "
        "untouched",
    )
    args = parser.parse_args()
    if args.timeline and not args.nic_mbps:
        parser.error("--timeline reads the shaped links: it needs --nic-mbps")
    if args.scenario == "load" and not args.nic_mbps:
        parser.error("--scenario load fills a shaped link: it needs --nic-mbps")
    try:
        levels = [float(word) for word in args.levels.split(",")]
    except ValueError:
        parser.error(f"--levels: not a list of shares: {args.levels!r}")
    if not all(0 < level <= 1 for level in levels):
        parser.error(f"--levels: each share of the link is over 0 and at most 1: {args.levels}")
    try:
        executor = executor_settings(args.executor)
    except ValueError as exc:
        parser.error(f"--executor: {exc}")
    try:
        broker_configs = broker_settings(args.broker)
    except ValueError as exc:
        parser.error(f"--broker: {exc}")
    args.grace_ms, settle_s = GRACE_MS, SETTLE_S
    partitions = CLIENT_PARTITIONS
    link = args.nic_mbps * 1_000_000 // 8
    if args.rate is None:  # each broker receives half of it: its leaders' produce, 2 followers'
        args.rate = int(args.link_share * link * BROKERS / RF) if link else 2_000_000
    fixed = int(0.4 * link) if link else FIXED
    named: dict[str, int | str | None] = {"none": None, "fixed": fixed, "adaptive": "adaptive"}
    settings: list[int | str | None] = []
    for word in args.settings.split(","):
        if word.strip() not in named and not word.strip().isdigit():
            parser.error(f"--settings: unknown setting {word!r} (none, fixed, adaptive, bytes/s)")
        settings.append(named.get(word.strip(), int(word) if word.strip().isdigit() else None))
    if args.fetch_kb is None:
        args.fetch_kb = FETCH_KB if link else 0
    after_s = AFTER_S
    if args.quick:  # a timeline too, where the links are shaped: the smoke run prints one
        args.produce_mb, args.runs, args.no_write, args.grace_ms = 4, 1, True, 5_000
        settings, settle_s, partitions, args.rate = ["adaptive"], 3.0, 6, 200_000
        args.away_s, after_s = min(args.away_s, 5.0), 4.0
        args.timeline = bool(args.nic_mbps)
        as_shipped.smoke(args)
        levels, args.settle_s, args.hold_s = levels[:1], 2.0, 4.0
    else:
        args.settle_s, args.hold_s = client_load.SETTLE_S, client_load.HOLD_S
    # Kafka's own leader rebalancing off: kmedic hands leadership back in a rejoin, and a heal
    # run's put-back elects the preferred leaders itself (bench_heal.Race.put_back), so no
    # leader moves at a time of Kafka's own inside a later run's baseline.
    rebalance = NO_AUTO_REBALANCE
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    with (
        contextlib.nullcontext(str(args.keep))
        if args.keep is not None
        else tempfile.TemporaryDirectory(prefix="bench-clients-")
    ) as tmp:
        race = Race(
            Path(tmp),
            args.produce_mb,
            args.grace_ms,
            nic_mbps=args.nic_mbps or None,
            broker_overrides=fetch_sizes(args.fetch_kb, args.answer_kb)
            | rebalance
            | broker_configs,
            fill_batch_bytes=args.fetch_kb * 1024 or 1_000_000,
            controller_overrides=rebalance,
            executor=executor,
            agent_interval_s=args.agent_interval,
            manager_interval_s=args.manager_interval,
            kafka_defaults=not args.bench_brokers,
            server_jvms=args.jvm == "server",
        )
        lat: Latencies | None = None
        timeline: Timeline | None = None
        try:
            t = time.monotonic()
            if args.scenario != "load":  # the load scenario copies nothing
                race.fill()
            print(f"produced {args.produce_mb} MB in {time.monotonic() - t:.0f} s", flush=True)
            client_topic(race, partitions)
            initial = race.placement()
            on_disk = sum(race.sizes()[k] * len(v) for k, v in initial.items() if k[0] == TOPIC)
            lat = Latencies(race.bootstrap, args.rate).start()
            time.sleep(0 if args.quick else WARM_UP_S)  # the first seconds weigh on no run
            if args.timeline or args.scenario == "load":
                timeline = Timeline(race.cluster).start()
            total = args.runs * len(settings)
            if args.scenario == "load":
                assert timeline is not None
                steps = client_load.ladder(
                    race, lat, timeline, levels, link, args.settle_s, args.hold_s
                )
            elif args.scenario == "rejoin":
                rejoins = [
                    measure_rejoin(race, lat, n * len(settings) + i, setting, args.away_s, settle_s)
                    for n in range(args.runs)
                    for i, setting in enumerate(settings)
                ]
            else:
                results = [
                    measure(
                        race,
                        lat,
                        n * len(settings) + i,
                        setting,
                        initial,
                        settle_s,
                        last,
                        timeline,
                        after_s,
                    )
                    for n in range(args.runs)
                    for i, setting in enumerate(settings)
                    for last in [n * len(settings) + i == total - 1]
                ]
        finally:
            if timeline is not None:
                timeline.close()
            if lat is not None:
                lat.close()
                if args.keep is not None:
                    lat.dump(args.keep / "latencies.csv")
            race.stop()
    if args.scenario == "load":
        section, text = "clients: the link's load", report_load(args, steps, link)
    elif args.scenario == "rejoin":
        section, text = "clients: rejoin", report_rejoin(args, rejoins)
    else:
        section, text = "clients", report(args, on_disk, results)
    print(text)
    if not args.no_write:
        write_section(section, text)


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
            f"{ms([r.base_p999 for r in mine])} / {ms([r.heal_p999 for r in mine])} | "
            f"{ratio:.2f}× | {ms([r.after_p50 for r in mine])} / "
            f"{ms([r.after_p99 for r in mine])} | "
            f"{statistics.median(r.heal_stalled for r in mine):.0f} of "
            f"{statistics.median(r.heal_records for r in mine):.0f} | "
            f"{sum(r.heal_failed for r in mine)} | {heal_s:.1f} s "
            f"({min(r.heal.replicated_s for r in mine):.1f}-"
            f"{max(r.heal.replicated_s for r in mine):.1f}) | "
            f"{max(r.failure_failed for r in mine)} / "
            f"{max(r.failure_max for r in mine):.1f} s | "
            f"{statistics.median(r.dropped for r in mine):.0f} |"
        )
    unthrottled = medians.get(None, (float("nan"), 0.0))[0]
    adaptive_heal, adaptive_ratio = medians.get("adaptive", (float("nan"), float("nan")))
    return "\n".join(
        [
            "## clients",
            "",
            as_shipped.header(args, broker_settings(args.broker), modelling(args)),
            "",
            "`bench/bench_clients.py`: what a heal costs the clients. bench_heal's cluster and "
            f"heal ({args.produce_mb} MB produced, {on_disk / 1e9:.2f} GB on disk, broker 6 "
            f"SIGKILLed, grace {args.grace_ms / 1000:.0f} s) under one steady acks=all producer "
            f"({args.rate / 1e6:.2f} MB/s of 1 kB records on a fixed schedule, at most 5 "
            "requests in flight as Kafka's own producer sends them, not idempotent: "
            "librdkafka's idempotent producer burns CPU while its requests wait; latency is "
            "librdkafka's, produce() to acknowledgement). Baseline: records produced in the "
            f"{BASELINE_S:.0f} s before the kill (kmedic running for "
            f"{SETTLE_S - BASELINE_S:.0f} s already); heal: from the first move to fully "
            f"replicated; after: {AFTER_SKIP_S:.0f} to {AFTER_S:.0f} s after fully replicated "
            "(the healed cluster, kmedic still running). The producer writes to a 48-partition "
            "topic of its own whose records "
            "are deleted before each run, so the heals copy the same data. Kill to first "
            "move (fencing, elections, the grace) is the failure's "
            "own cost, the same for every setting: its failed records and worst latency are "
            f"shown apart. {args.runs} runs per setting, taken in turn; medians. Machine: "
            f"{os.cpu_count()} cores shared by 6 brokers, a controller, ZooKeeper, 6 agents, "
            f"the manager and the producer; one disk; {network(args)}{settings_used(args)}.",
            "",
            "| throttle | before p50 / p99 | heal p50 / p99 | heal p95 | p99.9 before / heal "
            "| heal p99 ÷ before p99 "
            f"| after p50 / p99 | heal records ≥ {STALL_S:g} s | failed during the heal "
            "| kill to fully "
            "replicated | kill to first move: failed / worst | packets dropped |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
            f"Adaptive against the goals: heal p99 {adaptive_ratio:.2f}× the baseline (goal "
            f"≤ 1.5×), heal {adaptive_heal / unthrottled:.2f}× the unthrottled time (goal "
            "≤ 1.3×).",
            "",
        ]
    )


def report_load(args: argparse.Namespace, steps: list[client_load.Step], link: float) -> str:
    rows = [
        f"| {'the clients alone' if not s.level else f'{s.level:.0%}'} | "
        f"{s.filler / 1e6:.2f} MB/s | {s.link_in / 1e6:.2f} MB/s ({s.link_in / link:.0%}) | "
        f"{s.sources_out / 1e6:.2f} MB/s | {s.p50 * 1e3:.1f} / {s.p99 * 1e3:.1f} / "
        f"{s.p999 * 1e3:.1f} ms | {s.p99 / steps[0].p99:.2f}× | {s.cpu:.0%} | {s.records} | "
        f"{s.failed} |"
        for s in steps
    ]
    return "\n".join(
        [
            "## clients: the link's load",
            "",
            "`bench/bench_clients.py --scenario load`: the clients' produce latency against "
            f"broker {client_load.DESTINATION}'s incoming link (the dead broker's rack-mate, "
            "which a heal fills), with no copy and no kmedic: the link filled step by step "
            "by plain replication (a topic led by the other racks' brokers and followed by "
            f"broker {client_load.DESTINATION}, written acks=1 on a fixed schedule in "
            f"{client_load.RECORD // 1024} kB records, a copy's chunk), the "
            f"smoothest copy there is. Each step {args.hold_s:.0f} s after "
            f"{args.settle_s:.0f} s to settle; the producer as in the heal "
            f"({args.rate / 1e6:.2f} MB/s acks=all of 1 kB records, 5 requests in flight). "
            "Machine: "
            f"{os.cpu_count()} cores shared by 6 brokers, a controller, ZooKeeper and both "
            f"producers; {network(args)}.",
            "",
            f"| broker {client_load.DESTINATION}'s link asked | filler | broker "
            f"{client_load.DESTINATION} in (measured) | busiest source out | p50 / p99 / p99.9 "
            "| p99 ÷ the clients alone | CPU busy | records | failed |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
            *rows,
            "",
        ]
    )


def modelling(args: argparse.Namespace) -> dict[str, str]:
    """The broker settings that model the bench's world (as_shipped.header): the replica
    fetches scaled to the shaped link, Kafka's own leader rebalancing off."""
    return fetch_sizes(args.fetch_kb, args.answer_kb) | NO_AUTO_REBALANCE


def settings_used(args: argparse.Namespace) -> str:
    """The Kafka nodes' JVMs and the ``--executor`` and ``--broker`` settings of the run, as the
    report names them."""
    said = [f"`--executor {pair}`" for pair in args.executor]
    said += [f"`--broker {pair}`" for pair in args.broker]
    return f"; {JVM_WORDS[args.jvm]}" + (f"; every run with {', '.join(said)}" if said else "")


def network(args: argparse.Namespace) -> str:
    if not args.nic_mbps:
        return (
            "loopback network (no NIC limit: the adaptive throttle's capacity is the default "
            "125 MB/s per broker and direction)"
        )
    return (
        f"each broker's link shaped to {args.nic_mbps} Mbit/s "
        f"({args.nic_mbps / 8:.1f} MB/s) each way in the cluster's own network namespace "
        "(docs/local-cluster.md), which its agents report as their brokers' NIC speed; "
        + (
            f"replica fetches of at most {args.fetch_kb} kB a partition and "
            f"{args.answer_kb or args.fetch_kb} kB an answer, "
            f"the preload in {args.fetch_kb} kB batches, the chunk scaled to the link "
            "(`fetch_sizes`)"
            if args.fetch_kb
            else "Kafka's replica fetch sizes (1 MB a partition)"
        )
    )


if __name__ == "__main__":
    main()
