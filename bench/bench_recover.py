"""The last resort, its loss counted before it is taken (issue 77): does `kmedic recover`'s
estimate bound what an unclean election really loses?

A cluster of 4 brokers at Kafka's broker defaults; the agents beside the three that hold the
topic as shipped (a sample every 60 s, every 5 s while their broker is not running, heartbeats
every 5 s). Each seeded run: a topic at RF 3 and ``min.insync.replicas`` 2 on brokers 1, 2, 3,
led by 1; Kafka's verifiable producers write to it, one at acks=all and one at acks=1 (seeded
rates), until the leader's agent has sampled it twice (its write rate); then staged kills
leave one out-of-sync replica standing - broker 3 killed (it falls out of sync), broker 2
killed (the leader alone in sync: acks=all is refused, acks=1 goes on), the leader killed,
broker 3 started again (seeded pauses between) - and the partition is offline. `kmedic
recover --json` gives the ways out; the bench types back the election of broker 3 with its
bound, starts the other two again (they truncate to the new leader's log) and reads the topic
from its start with Kafka's verifiable consumer.

Witnesses kmedic does not control: the producers' acknowledgements (each with its offset),
the consumer's records, and the new leader's log end as Kafka answers it. Measured loss:
acknowledged records never consumed; records lost: the old leader's end (its newest
acknowledged offset + 1, a floor of it) minus the new leader's. The goal (issue 77): the
estimate at or above the loss in every run, and within one sample interval's writes (60 s at
the leader's rate) of it; with an eligible replica dead, the first way is to wait for it.

Prints a row per run and the table, and replaces the ``## the last resort`` section of
docs/reliability.md (``--no-write``: print only).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from bench_docs import write_section
from bench_fleet_manager import machine_line
from bench_heal import end_on_sigterm
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from composition.pipeline import Pipeline
from composition.soak import verifiable
from kmedic.localcluster import ClusterSpec, LocalCluster, process

RELIABILITY_MD = Path(__file__).resolve().parent.parent / "docs" / "reliability.md"
LEADER, ELIGIBLE, STALE, SPARE = 1, 2, 3, 4
AGENT_INTERVAL_S = 60.0  # the shipped default (agent/config.py)
T = TypeVar("T")


@dataclass
class Prepared:
    seed: int
    rng: random.Random
    topic: str
    rates: tuple[int, int]
    out: Path
    since: int
    producers: list[verifiable.ToolProcess]


@dataclass
class Run:
    seed: int
    rates: tuple[int, int]  # acks=all, acks=1 (messages/s asked)
    ways: list[str]
    estimate: int | None
    evidence_age_s: float | None
    new_end: int | None
    old_end: int  # the old leader's newest acknowledged offset + 1
    acked: int
    lost: int  # acknowledged, never consumed
    lost_all: int  # of them, acknowledged at acks=all
    interval_writes: float  # one sample interval's writes at the leader's sampled rate

    @property
    def records_lost(self) -> int | None:
        return None if self.new_end is None else max(0, self.old_end - self.new_end)

    @property
    def bounded(self) -> bool:
        """The estimate at or above the loss, the eligible replicas ranked first."""
        lost = self.records_lost
        return (
            self.estimate is not None
            and lost is not None
            and self.estimate >= lost
            and self.estimate >= self.lost
            and self.ways[:2] == [f"wait:{LEADER}", f"wait:{ELIGIBLE}"]
        )

    @property
    def holds(self) -> bool:
        """Bounded, and within one sample interval's writes of the loss."""
        lost = self.records_lost
        return (
            self.bounded
            and lost is not None
            and self.estimate is not None
            and (self.estimate - lost <= self.interval_writes)
        )

    def line(self) -> str:
        return (
            f"seed {self.seed}: writes {self.rates[0]}+{self.rates[1]}/s, ways "
            f"{' '.join(self.ways)}, estimate {self.estimate} (evidence {self.evidence_age_s} s), "
            f"records lost {self.records_lost} (new end {self.new_end}, old end {self.old_end}), "
            f"acked lost {self.lost} of {self.acked} ({self.lost_all} at acks=all), one "
            f"interval's writes {self.interval_writes:.0f}: {'holds' if self.holds else 'MISSED'}"
        )


def wait(probe: Callable[[], T | None], timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(KafkaError, KafkaException, OSError, KeyError, IndexError):
            found = probe()
            if found is not None and found is not False:
                return found
        if time.monotonic() > deadline:
            raise SystemExit(f"bench_recover: not seen within {timeout_s:.0f} s: {what}")
        time.sleep(0.5)


class Bench:
    def __init__(self, workdir: Path, agent_interval_s: float = AGENT_INTERVAL_S) -> None:
        self.workdir = workdir
        self.agent_interval_s = agent_interval_s
        self.cluster = LocalCluster.start(
            ClusterSpec(brokers=4, kafka_defaults=True), workdir / "cluster"
        )
        self.bootstrap = self.cluster.bootstrap_servers
        self.topics = {
            "brokerstats": "kmedic.brokerstats",
            "replica_loads": "kmedic.replica-loads",
            "actions": "kmedic.actions",
        }
        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:  # on the brokers alive at the end of each staging
            admin.create_topics(
                [NewTopic(t, replica_assignments={0: [SPARE, STALE]}) for t in self.topics.values()]
            )
        finally:
            admin.close()
        self.pipeline = Pipeline(self.cluster, workdir / "roles", cluster_name="recover")
        for broker in (LEADER, ELIGIBLE, STALE):
            self.pipeline.start_agent(
                broker, interval_s=agent_interval_s, topic=self.topics["brokerstats"]
            )
        self.config = workdir / "manager.yaml"
        self.config.write_text(yaml.safe_dump(self.pipeline.manager_config(topics=self.topics)))
        self.admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)

    def high_watermark(self, topic: str) -> int | None:
        consumer = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "bench-recover"})
        try:
            found = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=5.0)
        finally:
            consumer.close()
        return None if found is None or found[1] < 0 else int(found[1])

    def renew_admin(self) -> None:
        """A fresh Admin client: one that watched brokers die and come back kept a dead one's
        connection as the controller's (UnknownBrokerIdError on the next create)."""
        with contextlib.suppress(Exception):
            self.admin.close()
        self.admin = wait(
            lambda: KafkaAdminClient(bootstrap_servers=self.bootstrap), 60, "an Admin client"
        )

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.admin.close()
        self.pipeline.stop()
        self.cluster.stop()

    def partition(self, topic: str) -> tuple[int, list[int]]:
        [described] = self.admin.describe_topics([topic])
        p = described["partitions"][0]
        return int(p["leader_id"]), list(p["isr_nodes"])

    def prepare(self, seed: int) -> Prepared:
        """The run's topic and its two producers, started early: the leader's agent needs two
        samples of it (a minute or two at the shipped interval) before the run's rate is known,
        and the run before spends that long reading its own topic back."""
        rng = random.Random(seed)
        topic = f"recover-{seed}"
        self.renew_admin()
        self.admin.create_topics(
            [
                NewTopic(
                    topic,
                    replica_assignments={0: [LEADER, ELIGIBLE, STALE]},
                    topic_configs={"min.insync.replicas": "2"},
                )
            ]
        )
        wait(lambda: self.partition(topic)[0] == LEADER, 60, f"{topic} led by {LEADER}")
        rates = (rng.randint(20, 100), rng.randint(20, 100))
        out = self.workdir / topic
        since = int(time.time() * 1000)
        producers = [
            verifiable.start_producer(
                self.bootstrap, topic, out, throughput=rates[0], acks="all", value_prefix=1
            ),
            verifiable.start_producer(
                self.bootstrap, topic, out, throughput=rates[1], acks="1", value_prefix=2
            ),
        ]
        return Prepared(seed, rng, topic, rates, out, since, producers)

    def run(self, ready: Prepared, after: Callable[[], None]) -> Run:
        """``after``: called once every broker is back, before the topic is read back (the
        next run's topic prepared meanwhile)."""
        seed, rng, topic, rates, out, since, producers = (
            ready.seed, ready.rng, ready.topic, ready.rates, ready.out, ready.since, ready.producers
        )  # fmt: skip
        try:
            wait(lambda: self.rate_sampled(topic, since), 200, "the leader's agent's write rate")
            time.sleep(rng.uniform(0, 20))
            self.cluster.kill(STALE)
            wait(lambda: self.partition(topic)[1] == [LEADER, ELIGIBLE], 60, "3 out of sync")
            time.sleep(rng.uniform(2, 15))
            self.cluster.kill(ELIGIBLE)
            wait(lambda: self.partition(topic)[1] == [LEADER], 60, "the leader alone in sync")
            time.sleep(rng.uniform(2, 20))
            self.cluster.kill(LEADER)
            wait(lambda: self.partition(topic)[0] == -1, 60, f"{topic} offline")
        finally:
            # Killed, not stopped: with no leader their close would wait out the delivery
            # timeout; every acknowledgement is already printed (a line each, flushed).
            for tool in producers:
                if tool.pid is not None:
                    process.kill(tool.pid, tool.marker, signal.SIGKILL)
        self.cluster.restart(STALE)
        self.renew_admin()
        key = f"{topic}:0"
        dry = self.kmedic("recover", "--config", str(self.config), "--json")
        ways = json.loads(dry).get(key)
        if not ways:
            raise SystemExit(f"bench_recover: {key} not offline by `kmedic recover`: {dry}")
        elect = next(w for w in ways if w["way"] == f"elect:{STALE}")
        estimate = elect["loses_at_most"]
        done = json.loads(
            self.kmedic(
                "recover",
                "--config",
                str(self.config),
                "--json",
                "--partition",
                key,
                "--way",
                f"elect:{STALE}",
                "--accept-loss",
                "all" if estimate is None else str(estimate),
            )
        )
        self.cluster.restart_many([LEADER, ELIGIBLE])
        self.renew_admin()
        wait(lambda: len(self.partition(topic)[1]) == 3, 120, f"{topic} whole again")
        # The new leader's log end, from Kafka (its high watermark, now that the ISR is whole
        # again: under min.insync.replicas Kafka holds it back, KIP-966's strict rule)
        new_end = wait(lambda: self.high_watermark(topic), 60, f"{topic}'s end offset")
        done = {**done, "log_end": new_end}
        after()
        consumer = verifiable.start_consumer(self.bootstrap, topic, out)
        acked = self.acked(out, topic)
        try:
            wait(
                lambda: set(acked) - self.consumed(out, topic) <= self.beyond(acked, done),
                120,
                "the consumer reading every record the new leader holds",
            )
        finally:
            consumer.stop()
        consumed = self.consumed(out, topic)
        lost = set(acked) - consumed
        rate = self.leader_rate(topic)
        return Run(
            seed=seed,
            rates=rates,
            ways=[w["way"] for w in ways],
            estimate=estimate,
            evidence_age_s=(
                None if elect["evidence_age_ms"] is None else round(elect["evidence_age_ms"] / 1000)
            ),
            new_end=done.get("log_end"),
            old_end=max(acked.values(), default=-1) + 1,
            acked=len(acked),
            lost=len(lost),
            lost_all=sum(1 for v in lost if v.startswith("1.")),
            interval_writes=rate * self.agent_interval_s,
        )

    @staticmethod
    def beyond(acked: dict[str, int], done: dict[str, Any]) -> set[str]:
        end = done.get("log_end") or 0
        return {v for v, offset in acked.items() if offset >= end}

    @staticmethod
    def acked(out: Path, topic: str) -> dict[str, int]:
        """Every acknowledged value of both producers, with its offset."""
        found: dict[str, int] = {}
        for prefix in (1, 2):
            for event in verifiable.events(out / f"{topic}.{prefix}.producer.jsonl"):
                if event.get("name") == "producer_send_success":
                    found[str(event["value"])] = int(str(event["offset"]))
        return found

    @staticmethod
    def consumed(out: Path, topic: str) -> set[str]:
        return set(verifiable.consumed_values(verifiable.events(out / f"{topic}.consumer.jsonl")))

    def stats_records(self, since_ms: int) -> list[dict[str, Any]]:
        """The stats topic's records sampled since ``since_ms``, read to its end as it was when
        asked (the agents write on meanwhile)."""
        topic = self.topics["brokerstats"]
        consumer = Consumer(
            {"bootstrap.servers": self.bootstrap, "group.id": "bench-recover"}
            | {"enable.auto.commit": False}
        )
        records: list[dict[str, Any]] = []
        try:
            parts = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            ends = {
                p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in parts
            }
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
            left = {p for p, end in ends.items() if end > 0}
            deadline = time.monotonic() + 30
            while left and time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is None or msg.error() is not None:
                    continue
                if int(msg.offset() or 0) + 1 >= ends[int(msg.partition() or 0)]:
                    left.discard(int(msg.partition() or 0))
                record = json.loads(msg.value() or b"{}")
                if record.get("timestamp_ms", 0) >= since_ms:
                    records.append(record)
        finally:
            consumer.close()
        return records

    def leader_entries(self, topic: str, since_ms: int = 0) -> list[dict[str, Any]]:
        return [
            entry
            for r in self.stats_records(since_ms)
            if r.get("broker_id") == LEADER
            for entry in r.get("leaders") or []
            if entry["topic"] == topic
        ]

    def rate_sampled(self, topic: str, since_ms: int) -> bool:
        return any(e["messages_in_per_s"] > 0 for e in self.leader_entries(topic, since_ms))

    def leader_rate(self, topic: str) -> float:
        rates = [e["messages_in_per_s"] for e in self.leader_entries(topic)]
        return rates[-1] if rates else 0.0

    def kmedic(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "composition.cli", *args],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise SystemExit(f"bench_recover: kmedic {args[0]} failed: {done.stderr.strip()}")
        return done.stdout


HEADER = (
    "| seed | writes/s asked (all + 1) | first ways | estimate (records) | evidence age "
    "| records lost (offsets) | acknowledged lost | one interval's writes | holds |"
)


def report(runs: list[Run], seeds: str, interval_s: float = AGENT_INTERVAL_S) -> str:
    held = sum(r.holds for r in runs)
    slack = [
        r.estimate - r.records_lost
        for r in runs
        if r.estimate is not None and r.records_lost is not None
    ]
    spread = f"{min(slack)}-{max(slack)} (median {statistics.median(slack):.0f})" if slack else "-"
    rows = "\n".join(
        f"| {r.seed} | {r.rates[0]} + {r.rates[1]} | {r.ways[0]}, {r.ways[1]} | "
        f"{r.estimate} | {r.evidence_age_s} s | {r.records_lost} | {r.lost} of {r.acked} "
        f"({r.lost_all} at acks=all) | {r.interval_writes:.0f} | "
        f"{'yes' if r.holds else '**no**'} |"
        for r in runs
    )
    return f"""## the last resort

`bench/bench_recover.py` (seeds {seeds}; {machine_line()}): 4 brokers at Kafka's broker
defaults, the agents every {interval_s:.0f} s (shipped: 60 s; every 5 s while their broker is
not running); a topic at RF 3 and min.insync.replicas 2 on brokers 1-3, Kafka's verifiable
producers at acks=all and acks=1; broker 3 killed, then 2, then the leader 1, then 3 started
again (seeded pauses): offline, one out-of-sync replica standing. The estimate is `kmedic
recover`'s bound for electing broker 3, taken then; the loss is counted after the election by
Kafka's verifiable consumer (acknowledged, never read) and by offsets (the old leader's newest
acknowledged offset + 1 minus the new leader's log end). The goal: the estimate at or above the
loss, and within one sample interval's writes (at the leader's sampled rate) of it.

{HEADER}
| --- | --- | --- | ---: | ---: | ---: | --- | ---: | --- |
{rows}

**{held} of {len(runs)} held**; the estimate above the records lost by {spread}.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    end_on_sigterm()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=7701)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: one seed, agents every 2 s, judged by the bound alone; docs untouched",
    )
    args = parser.parse_args()
    interval_s = AGENT_INTERVAL_S
    if args.quick:
        args.seeds, args.no_write, interval_s = 1, True, 2.0
    seeds = [args.first_seed + n for n in range(args.seeds)]
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-recover-") as tmp:
        bench = Bench(Path(tmp), interval_s)
        try:
            ready = [bench.prepare(seeds[0])]

            def next_one(n: int) -> Callable[[], None]:
                return lambda: (
                    ready.append(bench.prepare(seeds[n + 1])) if n + 1 < len(seeds) else None
                )

            for n in range(len(seeds)):
                runs.append(bench.run(ready[n], next_one(n)))
                print(runs[-1].line(), flush=True)
        finally:
            bench.stop()
    text = report(runs, ", ".join(map(str, seeds)), interval_s)
    print(text)
    if not args.no_write:
        write_section("the last resort", text, RELIABILITY_MD)
    # A smoke run judges what happened, not how tight: no timed figure in a test.
    if not all(r.bounded if args.quick else r.holds for r in runs):
        raise SystemExit("bench_recover: an estimate missed its goal (rows above)")


if __name__ == "__main__":
    main()
