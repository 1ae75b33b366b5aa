"""The end of a soak run: the producers stop, the consumers read to the end, the cluster is
given time to be whole, and every invariant is checked into a report - ``report.json`` and a
readable summary - before every process is stopped and checked gone."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from composition.prometheus import FiredAlert
from composition.soak import invariants, probes
from composition.soak.appended import read_appended
from composition.soak.request_log import read_requests
from composition.soak.run import (
    AUDIT_TOPIC,
    ISOLATED_BROKERS,
    ISOLATED_TOPIC,
    MANAGERS,
    Rig,
    SoakSettings,
    cpu_pressure_us,
)
from composition.soak.schedule import Schedule
from composition.soak.verifiable import consumed_count, tally
from kmedic.errors import KmedicError
from manager.audit.kafka_reader import read_records
from manager.audit.log import AuditRecord

CATCH_UP_S = 120.0  # how long the consumers may take to read the last acknowledged messages
SPOOL_DRAIN_S = 60.0  # how long the managers may take to replay their audit spools


@dataclass
class Report:
    seed: int
    schedule: list[str]
    timeline: list[tuple[float, str]]
    topics: list[dict[str, Any]]
    checks: list[invariants.Check]
    counts: dict[str, int] = field(default_factory=dict)
    # Each cut manager's last write and its successor's first, as the brokers received them.
    leases: list[str] = field(default_factory=list)

    @property
    def held(self) -> bool:
        return all(c.held for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "held": self.held,
            "schedule": self.schedule,
            "timeline": [{"at_s": at, "event": what} for at, what in self.timeline],
            "topics": self.topics,
            "counts": self.counts,
            "leases": self.leases,
            "checks": [
                {"name": c.name, "held": c.held, "problems": list(c.problems)} for c in self.checks
            ],
        }

    def lines(self) -> list[str]:
        out = [f"soak seed {self.seed}: " + ("every invariant held" if self.held else "FAILED")]
        for t in self.topics:
            out.append(
                f"  {t['topic']}: {t['acked']} acknowledged, {t['consumed']} consumed, "
                f"{t['lost']} lost ({t['send_errors']} sends failed, never acknowledged)"
            )
        out.append("  " + ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items())))
        out.extend(f"  {line}" for line in self.leases)
        for check in self.checks:
            mark = "held" if check.held else "BROKEN"
            out.append(f"  [{mark}] {check.name}")
            out.extend(f"      {p}" for p in check.problems)
        return out

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=2))


def finish(rig: Rig, schedule: Schedule) -> Report:
    """Stop the writes, read to the end, check; the processes are stopped by ``stop``."""
    tools = rig.settings.workdir / "tools"
    producers = [t for t in rig.tools if t.name.startswith("producer")]
    for producer in producers:
        producer.stop()
    rig.timeline.say("producers stopped")
    for topic in rig.topics:
        acked = len(tally(topic, tools / f"{topic}.producer.jsonl", Path("/nonexistent")).acked)
        _wait_consumed(tools / f"{topic}.consumer.jsonl", acked)
    for consumer in (t for t in rig.tools if t.name.startswith("consumer")):
        consumer.stop()
    rig.timeline.say("consumers stopped")
    whole = True
    try:
        probes.wait(rig.whole, 300, "a whole cluster at the end", interval_s=2)
    except Exception as exc:
        whole = False
        rig.timeline.say(f"not whole at the end: {exc}")
    tallies = [
        tally(t, tools / f"{t}.producer.jsonl", tools / f"{t}.consumer.jsonl") for t in rig.topics
    ]
    records = list(read_records(rig.bootstrap, timeout_s=30))
    try:
        appended = read_appended(rig.bootstrap, AUDIT_TOPIC)
        unread = ""
    except KmedicError as exc:
        appended, unread = [], f"the audit topic as Kafka appended it could not be read: {exc}"
    fired, unjudged = _fired(rig)
    pressure = _cpu_pressure(rig)
    try:
        seen, unseen = read_requests(rig.cluster.node_directories), ""
    except OSError as exc:
        seen, unseen = [], f"the brokers' request logs could not be read: {exc}"
    checks = [
        invariants.messages(
            {t.topic: len(t.lost) for t in tallies}, {t.topic: len(t.acked) for t in tallies}
        ),
        invariants.one_actor(records),
        invariants.quiet_when_cut(records, rig.cuts),
        invariants.quiet_as_kafka_saw(appended, rig.cuts, unread),
        invariants.lease_as_the_brokers_saw(seen, rig.cuts, unseen),
        invariants.no_duplicate_move(records),
        invariants.one_end_per_move(records),
        invariants.alerts(records, rig.warranted),
        invariants.pages(
            fired, rig.warranted, rig.timeline.started_wall, unjudged, run_wide(rig.settings)
        ),
        invariants.in_order(records),
        invariants.on_schedule(
            rig.episodes_s, schedule.estimated_s(), judged=rig.settings.length_s >= 600
        ),
        invariants.roles_running(
            [n for n, role in rig.pipeline.roles.items() if role.pid and not role.running()]
        ),
        invariants.tail_readable(records, *_tail(rig.bootstrap)),
        invariants.end_state(
            probes.under_replicated(rig.bootstrap) if whole else ["(timed out)"],
            probes.reassigning(rig.bootstrap),
            probes.throttles(rig.bootstrap, rig.cluster.broker_ids),
            _spools_replayed(rig),
            _misplaced(rig),
        ),
    ]
    return Report(
        seed=schedule.seed,
        schedule=schedule.lines(),
        timeline=list(rig.timeline.events),
        topics=[t.summary() for t in tallies],
        checks=checks,
        counts={**_counts(records, schedule), **pressure, **_heals(rig)},
        leases=invariants.lease_verdicts(seen, rig.cuts),
    )


def _misplaced(rig: Rig) -> list[str]:
    """The isolated topic outside its group, read from the metadata: the hard constraint.
    (Distinct racks are best effort under the default policy: a group of four brokers on
    three racks cannot keep them distinct when its only broker of a rack dies, and kmedic
    then places best effort and reports the violation every cycle, as it should.)"""
    return probes.outside(rig.bootstrap, ISOLATED_TOPIC, ISOLATED_BROKERS)


def _spools_replayed(rig: Rig) -> int:
    """Audit records still in the managers' spools once they have had time to replay them (a
    spool fills while the audit topic's leader is down or hung, and drains once per
    ``retry_interval_s``). Read from the managers' own gauge: the spool files are theirs."""

    def pending() -> int | None:
        values = [probes.metric(rig.ports[m], "kmedic_audit_spool_pending") for m in MANAGERS]
        return None if None in values else int(sum(v or 0 for v in values))

    left = pending()
    deadline = time.monotonic() + SPOOL_DRAIN_S
    while (left is None or left > 0) and time.monotonic() < deadline:
        time.sleep(2)
        left = pending()
    return -1 if left is None else left


def _tail(bootstrap: str) -> tuple[list[str], str]:
    """The ids ``kmedic actions tail --json`` prints, as on-call would run it; and its error."""
    cmd = [sys.executable, "-m", "composition.cli", "actions", "tail", "--json"]
    try:
        done = subprocess.run(
            [*cmd, "--bootstrap", bootstrap], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        return [], "no answer in 120 s"
    ids = []
    for line in done.stdout.splitlines():
        try:
            ids.append(str(json.loads(line)["id"]))
        except (ValueError, KeyError, TypeError):
            return ids, f"a line that is not a record: {line[:200]!r}"
    error = "" if done.returncode == 0 else f"exit {done.returncode}: {done.stderr[-500:]}"
    return ids, error


def _wait_consumed(consumer_out: Path, acked: int) -> None:
    """Until the consumer has read as many records as were acknowledged, or stops gaining."""
    deadline = time.monotonic() + CATCH_UP_S
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        read = consumed_count(consumer_out)
        if read >= acked:
            return
        if read != last:
            last, since = read, time.monotonic()
        elif time.monotonic() - since > 30:
            return
        time.sleep(2)


def _heals(rig: Rig) -> dict[str, int]:
    """The heals' times from kill to whole: how many, their median and their longest (s)."""
    times = sorted(invariants.heal_times(rig.timeline.events))
    if not times:
        return {}
    return {
        "heals": len(times),
        "heal_median_s": round(times[len(times) // 2]),
        "heal_max_s": round(times[-1]),
    }


def _cpu_pressure(rig: Rig) -> dict[str, int]:
    """The share of the episodes' time some runnable task waited for a CPU, in percent."""
    now, then = cpu_pressure_us(), rig.timeline.pressure_us
    span_s = time.monotonic() - rig.timeline.started
    if now is None or then is None or span_s <= 0:
        return {}
    return {"cpu_pressure_pct": round(100 * (now - then) / 1e6 / span_s)}


def _counts(records: list[AuditRecord], schedule: Schedule) -> dict[str, int]:
    kinds = [r.kind for r in records]
    return {
        "episodes": len(schedule.episodes),
        "faults": schedule.fault_count(),
        "moves_started": kinds.count("action_started"),
        "moves_completed": kinds.count("action_completed"),
        "moves_failed": kinds.count("action_failed"),
        "alerts_raised": kinds.count("alert_raised"),
        "audit_records": len(records),
    }


def stop(rig: Rig) -> list[str]:
    """Stop every process the run started; what is still running after is returned."""
    for tool in rig.tools:
        tool.stop()
    if rig.prometheus is not None:
        rig.prometheus.stop()
    rig.pipeline.stop()
    for proxy in rig.proxies.values():
        proxy.stop()
    rig.cluster.stop()
    rig.launcher.shutdown(wait=True)
    rig.network.close()
    left = [t.name for t in rig.tools if t.running()]
    left += ["prometheus"] if rig.prometheus is not None and rig.prometheus.running() else []
    left += [name for name, role in rig.pipeline.roles.items() if role.running()]
    left += [str(n["node"]) for n in rig.cluster.status() if n["running"]]
    return left


def _fired(rig: Rig) -> tuple[list[FiredAlert], list[str]]:
    """Each alert that reached firing in the run's Prometheus, and what kept some from being
    judged (a Prometheus that cannot be asked, a target never scraped)."""
    prometheus = rig.prometheus
    if prometheus is None or prometheus.started_at is None:
        return [], ["no Prometheus ran: the pages were not judged"]
    try:
        fired = prometheus.fired(prometheus.started_at)
        scraped = prometheus.scraped(prometheus.started_at)
    except (KmedicError, OSError, ValueError) as exc:
        return [], [f"Prometheus at {prometheus.url} could not be asked which alerts fired: {exc}"]
    unseen = [
        f"Prometheus never scraped {target} ({job}): its alerts were not judged"
        for job, targets in prometheus.targets_by_job().items()
        for target in sorted(targets - scraped.get(job, set()))
    ]
    return fired, unseen


def run_wide(settings: SoakSettings) -> dict[str, str]:
    """The alerts a run's set-up warrants for its whole length: without the Spark job there is
    no load data, and KmedicStaleLoadData fires once its 10 minutes have passed (a short run
    on a slow day outlasts them: CI, 2026-12-07, +531 s)."""
    return {} if settings.stream else {"KmedicStaleLoadData": "no Spark job in this run"}
