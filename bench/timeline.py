"""What happens second by second while a bench runs on a shaped cluster: each broker's link
bytes each way (its tc classes, read every second), the reassignments in flight and the
machine's CPU, printed in buckets beside the producer's latency of the records produced in
each. The figures behind a heal's averages: whether a copy ran at its rate, when the clients
waited, and whether the two cores were what they waited for."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

from kmedic.localcluster import LocalCluster
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE

MB = 1e6


@dataclass(frozen=True)
class Sample:
    at: float  # wall clock (s)
    link: dict[int, tuple[int, int]]  # broker -> (sent, received) bytes so far
    moving: int  # reassignments in flight (-1: not read)
    # broker -> its replication throttle rates (leader out, follower in; bytes/s, None: none)
    rates: dict[int, tuple[int | None, int | None]] | None = None  # None: not read
    cpu: tuple[int, int] | None = None  # the machine's CPU ticks so far (busy, all): busy_ticks
    own: float | None = None  # this process's CPU seconds so far (the bench's own clients)


def busy_ticks() -> tuple[int, int]:
    """The machine's CPU ticks so far: (busy, all), from /proc/stat's first line."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


class Timeline:
    """Samples a shaped cluster every ``period_s`` in a thread of its own until closed."""

    def __init__(self, cluster: LocalCluster, period_s: float = 1.0) -> None:
        if cluster.namespace is None:
            raise ValueError("a timeline needs a shaped cluster (--nic-mbps)")
        self._namespace = cluster.namespace
        self._hosts = {b: cluster.broker(b).host for b in cluster.broker_ids}
        self._bootstrap = cluster.bootstrap_servers
        self._admin: KafkaAdminClient | None = None  # made in the thread, again after a failure
        self._period = period_s
        self.samples: list[Sample] = []
        self.error: str | None = None  # why a read failed, the first time one did
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="timeline", daemon=True)

    def start(self) -> Timeline:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        order = sorted(self._hosts)
        while not self._stop.wait(self._period):
            try:
                counted = self._namespace.link_bytes([self._hosts[b] for b in order])
            except Exception as exc:  # a failed read is a gap in the timeline, not a failure
                self.error = self.error or f"link bytes: {exc!r}"
                continue
            rates = None
            try:
                self._admin = self._admin or KafkaAdminClient(bootstrap_servers=self._bootstrap)
                moving = len(self._admin.list_partition_reassignments())
                if moving:
                    rates = throttle_rates(self._admin, order)
            except Exception as exc:  # a client stuck on the killed broker: a new one next time
                self.error = self.error or f"reassignments: {exc!r}"
                moving = -1
                if self._admin is not None:
                    self._admin.close()
                self._admin = None
            link = {b: counted[self._hosts[b]] for b in order}
            own = sum(os.times()[:2])
            self.samples.append(Sample(time.time(), link, moving, rates, busy_ticks(), own))
        if self._admin is not None:
            self._admin.close()

    def report(
        self,
        start: float,
        end: float,
        latencies: Callable[[float, float], Sequence[float]],
        bucket_s: float = 5.0,
    ) -> list[str]:
        """The timeline of [start, end) (``buckets``), and the first failed read if any."""
        lines = buckets(self.samples, start, end, latencies, bucket_s)
        if self.error is not None:
            lines.append(f"(a read failed: {self.error}; -1: moves not read)")
        return lines


def throttle_rates(
    admin: KafkaAdminClient, brokers: Sequence[int]
) -> dict[int, tuple[int | None, int | None]]:
    """Each broker's replication throttle rates (leader out, follower in), as set now; a
    broker that does not answer (the killed one) is left out."""
    rates: dict[int, tuple[int | None, int | None]] = {}
    for broker in brokers:
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker), configs=None)
        try:
            found = admin.describe_configs([resource], config_filter="modified")
        except Exception:  # down: no rate to show
            continue
        entries: Any = next(iter(found.get("broker", {}).values()), {})
        rates[broker] = (_rate(entries, LEADER_RATE), _rate(entries, FOLLOWER_RATE))
    return rates


def _rate(entries: Any, key: str) -> int | None:
    item = entries.get(key) if isinstance(entries, dict) else None
    value = item.get("value") if isinstance(item, dict) else None
    return int(value) if isinstance(value, str) and value.isdigit() else None


def buckets(
    samples: Sequence[Sample],
    start: float,
    end: float,
    latencies: Callable[[float, float], Sequence[float]],
    bucket_s: float = 5.0,
) -> list[str]:
    """One line per ``bucket_s`` of [start, end): each broker's MB/s in and out over it (from
    the last sample before it to its last; with a throttle rate set at its end, the rates
    after them: ``3:2.8/1.2<0.6/1.0``, follower in / leader out, '-' none), the moves in
    flight at its end, the machine's CPU busy over it and the bench's own share of it (where
    both samples read them), and the latency of the records produced in it."""
    lines = []
    t = start
    while t < end:
        inside = [s for s in samples if t <= s.at <= t + bucket_s]
        before = [s for s in samples if s.at <= t]
        if inside and before:
            a, b = before[-1], inside[-1]
            span = b.at - a.at
            rates = " ".join(
                f"{k}:{(b.link[k][1] - a.link[k][1]) / span / MB:.1f}"
                f"/{(b.link[k][0] - a.link[k][0]) / span / MB:.1f}{_throttled(b, k)}"
                for k in sorted(b.link)
            )
            got = sorted(latencies(t, t + bucket_s))
            shown = (
                f"{len(got)} rec p50 {pct(got, 0.5) * 1e3:.0f} p99 {pct(got, 0.99) * 1e3:.0f} "
                f"max {got[-1] * 1e3:.0f} ms"
                if got
                else "no records"
            )
            cpu = f"cpu {cpu_busy(a, b):4.0%}{_own(a, b)}  " if a.cpu and b.cpu else ""
            lines.append(
                f"{t - start:6.0f}s moves {b.moving:3d}  in/out MB/s {rates}  {cpu}{shown}"
            )
        t += bucket_s
    return lines


def cpu_busy(a: Sample, b: Sample) -> float:
    """The share of the machine's CPU busy between two samples that read it."""
    assert a.cpu is not None and b.cpu is not None
    return (b.cpu[0] - a.cpu[0]) / max(1, b.cpu[1] - a.cpu[1])


def _own(a: Sample, b: Sample) -> str:
    """The bench's own share of the machine's CPU between two samples, where both read it."""
    if a.own is None or b.own is None:
        return ""
    cores = os.cpu_count() or 1
    return f" (bench {(b.own - a.own) / max(1e-9, b.at - a.at) / cores:.0%})"


def _throttled(sample: Sample, broker: int) -> str:
    out, into = (sample.rates or {}).get(broker, (None, None))
    if out is None and into is None:
        return ""
    return f"<{_mb(into)}/{_mb(out)}"


def _mb(rate: int | None) -> str:
    return "-" if rate is None else f"{rate / MB:.1f}"


def pct(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank); NaN when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")
