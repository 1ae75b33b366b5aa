"""What a soak must end with, checked over what it collected (pure): each check returns the
problems it found, every one a sentence with its numbers; none found is a held invariant.

- no acknowledged message lost (acked - consumed, per topic: composition.soak.verifiable);
- never two managers acting: each fencing epoch belongs to one instance, and the action
  records of an epoch all come before those of the next;
- a manager cut off ZooKeeper starts nothing: no act and no move record of the cut instance
  from a moment after the cut until its link is back (composition.soak.cuts), by the times
  it wrote in them, and by the times Kafka appended them (composition.soak.appended: the
  brokers' side of the same question);
- a cut manager's lease, as the brokers saw it (Kafka's own request logs,
  composition.soak.request_log): no write request of its (a reassignment, a config, an
  election, a record to its audit topic) received after its lease could have ended, and none
  after its successor's first write until its link is back;
- no duplicate move: a move (partition and target) is started once until it completes or
  fails - a leader that takes over adopts a running move, it does not start it again;
- each move's end audited once: one ``action_completed`` (or ``action_failed``) per start,
  across leaders - a leader that adopts its predecessor's plan does not tell an end again;
- the alerts raised: none (no episode calls for one: a restart in grace, a pause, a hang, a
  failed disk, an outage of the audit topic's brokers inside the grace and a completed heal
  never page);
- the pages on-call would get, in the run's Prometheus, which scraped every kmedic process:
  each alert of the shipped rules that reached *firing* matched to the episode that warranted
  it (two brokers dead, one more than max_dead_brokers), and each warranted one fired;
- the audit topic in each manager's order: an instance's records of one epoch appear in the
  order it wrote them, spooled ones included;
- the end state: every partition fully replicated, the isolated topic inside its group, no
  reassignment running, no throttle left, the audit spool empty;
- every role the run started still running at the end (a manager started again after a kill
  must stay up as a standby);
- every audit record readable by on-call: ``kmedic actions tail --json`` prints each record
  the topic holds, once."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from composition.prometheus import FiredAlert
from composition.soak.appended import Appended
from composition.soak.cuts import IN_FLIGHT_MS, Cut
from composition.soak.request_log import Seen
from manager.audit.log import AuditRecord

ACTION_KINDS = ("action_started", "action_progress", "action_completed", "action_failed")


@dataclass(frozen=True)
class Check:
    name: str
    problems: tuple[str, ...]

    @property
    def held(self) -> bool:
        return not self.problems


def one_actor(records: Iterable[AuditRecord]) -> Check:
    """Each epoch is one instance's, and no two epochs' action windows overlap."""
    holders: dict[int, set[str]] = defaultdict(set)
    windows: dict[int, tuple[int, int]] = {}
    for r in records:
        if r.kind not in ACTION_KINDS:
            continue
        holders[r.epoch].add(r.instance)
        first, last = windows.get(r.epoch, (r.time_ms, r.time_ms))
        windows[r.epoch] = (min(first, r.time_ms), max(last, r.time_ms))
    problems = [
        f"epoch {e} acted from {len(who)} instances: {sorted(who)}"
        for e, who in sorted(holders.items())
        if len(who) > 1
    ]
    epochs = sorted(windows)
    for older, newer in itertools.pairwise(epochs):
        if windows[older][1] > windows[newer][0]:
            problems.append(
                f"epoch {older} acted until {windows[older][1]}, after epoch {newer} began "
                f"acting at {windows[newer][0]} ({windows[older][1] - windows[newer][0]} ms)"
            )
    return Check("never two managers acting", tuple(problems))


def quiet_when_cut(records: Iterable[AuditRecord], cuts: Iterable[Cut]) -> Check:
    """No act and no move from a manager while it is cut off ZooKeeper: it cannot prove its
    lease, so whatever it did then would be a second actor (a cycle begun before the cut may
    land its records within ``IN_FLIGHT_MS``)."""
    cuts = list(cuts)
    problems = [
        f"{r.instance} wrote {r.kind} ({r.summary}) {r.time_ms - cut.start_ms} ms into its "
        f"cut off ZooKeeper"
        for cut in cuts
        for r in records
        if r.instance == cut.instance
        and cut.start_ms + IN_FLIGHT_MS < r.time_ms <= cut.end_ms
        and _acts(r)
    ]
    return Check(f"a manager cut off ZooKeeper starts nothing ({len(cuts)} cuts)", tuple(problems))


def quiet_as_kafka_saw(
    appended: Iterable[Appended], cuts: Iterable[Cut], unread: str = ""
) -> Check:
    """The same, from the brokers' side: no act and no move record of a cut instance appended
    by Kafka (the audit topic's own append time) from ``IN_FLIGHT_MS`` after its cut until its
    link is back. A record it made before the cut and replayed from its spool meanwhile is
    its past, not a write under a lost lease. ``unread``: why the topic could not be read."""
    cuts = list(cuts)
    problems = [unread] if unread else []
    problems += [
        f"{a.record.instance} wrote {a.record.kind} ({a.record.summary}), appended by Kafka "
        f"{a.appended_ms - cut.start_ms} ms into its cut off ZooKeeper"
        for cut in cuts
        for a in appended
        if a.record.instance == cut.instance
        and cut.start_ms + IN_FLIGHT_MS < a.appended_ms <= cut.end_ms
        and a.record.time_ms > cut.start_ms
        and _acts(a.record)
    ]
    return Check(
        f"a manager cut off ZooKeeper: nothing it writes reaches Kafka ({len(cuts)} cuts, "
        "judged by the brokers' append times)",
        tuple(problems),
    )


def _acts(r: AuditRecord) -> bool:
    return r.kind.startswith("action_") or (r.kind == "decision" and r.summary.startswith("act"))


def no_duplicate_move(records: Iterable[AuditRecord]) -> Check:
    """A move is started once until it ends (completed or failed)."""
    running: dict[str, tuple[int, ...]] = {}
    problems = []
    for r in sorted(records, key=lambda r: r.time_ms):
        if r.kind not in ("action_started", "action_completed", "action_failed"):
            continue
        for partition in r.partitions:
            target = tuple((r.after or {}).get("replicas", ()))
            if r.kind == "action_started":
                if running.get(partition) == target:
                    problems.append(
                        f"{partition} -> {list(target)} started again by {r.instance} "
                        f"(epoch {r.epoch}) while it was running"
                    )
                running[partition] = target
            else:
                running.pop(partition, None)
    return Check("no duplicate move", tuple(problems))


def one_end_per_move(records: Iterable[AuditRecord]) -> Check:
    """A move's end (completed or failed) is audited once after its start, whoever tells it;
    a move that failed before it started (``not_started``: a destination died while it
    waited) is its own start and end (the executor tells it once per plan:
    tests/unit/test_executor_leadership.py)."""
    ended: dict[str, AuditRecord] = {}
    problems = []
    for r in sorted(records, key=lambda r: r.time_ms):
        if r.kind not in ("action_started", "action_completed", "action_failed"):
            continue
        for partition in r.partitions:
            first = ended.get(partition)
            if r.kind == "action_started":
                ended.pop(partition, None)
            elif r.details.get("not_started"):
                ended[partition] = r
            elif first is not None:
                problems.append(
                    f"{partition}: {r.kind} told again by {r.instance} (epoch {r.epoch}), "
                    f"{r.time_ms - first.time_ms} ms after {first.instance} (epoch "
                    f"{first.epoch}) told its {first.kind}"
                )
            else:
                ended[partition] = r
    return Check("each move's end audited once", tuple(problems))


@dataclass(frozen=True)
class Warranted:
    """An episode whose fault must page: ``alerts`` must fire between ``start_s`` and
    ``end_s`` (seconds since the epoch) plus ``PAGE_SLACK_S``."""

    episode: str
    alerts: tuple[str, ...]
    start_s: float
    end_s: float

    def covers(self, alert: FiredAlert) -> bool:
        return (
            alert.name in self.alerts
            and self.start_s <= alert.first_firing_s <= self.end_s + PAGE_SLACK_S
        )


PAGE_SLACK_S = 60.0  # a rule's evaluation and a scrape after the episode's end


def alerts(
    records: Iterable[AuditRecord],
    warranted: Iterable[Warranted] = (),
) -> Check:
    """Every alert raised outside the episodes that warrant one, with its time: no other
    episode of the schedule calls for one (a heal, a restart or stop inside the grace, an
    outage shorter than the grace never page)."""
    windows = [(w.start_s * 1000, (w.end_s + PAGE_SLACK_S) * 1000) for w in warranted]
    raised = [r for r in records if r.kind == "alert_raised"]
    problems = [
        f"{r.time_ms}: {r.summary} ({r.instance}, epoch {r.epoch})"
        for r in raised
        if not any(start <= r.time_ms <= end for start, end in windows)
    ]
    return Check(
        f"no alert raised but where an episode warranted one ({len(raised) - len(problems)})",
        tuple(problems),
    )


def pages(
    fired: list[FiredAlert],
    warranted: list[Warranted] = [],  # noqa: B006 - read only
    since_s: float = 0.0,
    unjudged: list[str] = [],  # noqa: B006 - read only
    run_wide: dict[str, str] = {},  # noqa: B006 - read only
) -> Check:
    """The pages on-call got, matched to the episodes that warranted them: every alert that
    reached *firing* in Prometheus must be one a warranted episode names, within it (the
    rules wait out what else the schedule draws, so any other is a page for nothing), and
    every warranted alert must have fired. ``unjudged``: why some could not be asked.
    ``run_wide``: alerts the run's own set-up warrants from start to end, and why (a run
    without the Spark job has no load data: KmedicStaleLoadData fires once its `for` has
    passed), neither required nor a page for nothing."""
    problems = list(unjudged)
    problems += [
        f"{a.sentence(since_s)}: a page for nothing (no episode warranted it)"
        for a in fired
        if not any(w.covers(a) for w in warranted) and a.name not in run_wide
    ]
    problems += [
        f"{alert} did not fire during {w.episode} (+{w.start_s - since_s:.0f} s to "
        f"+{w.end_s - since_s:.0f} s): a page that should have woken someone"
        for w in warranted
        for alert in w.alerts
        if not any(a.name == alert and w.covers(a) for a in fired)
    ]
    matched = sum(1 for a in fired if any(w.covers(a) for w in warranted))
    by_setup = sorted({f"{a.name} ({run_wide[a.name]})" for a in fired if a.name in run_wide})
    return Check(
        f"the pages: {matched} fired as warranted by {len(warranted)} episodes, none other"
        + (f"; warranted by the run itself: {', '.join(by_setup)}" if by_setup else ""),
        tuple(problems),
    )


def messages(lost: dict[str, int], acked: dict[str, int]) -> Check:
    problems = [
        f"{topic}: {n} of {acked[topic]} acknowledged messages never consumed"
        for topic, n in sorted(lost.items())
        if n
    ]
    empty = [f"{topic}: no message was acknowledged" for topic, n in sorted(acked.items()) if not n]
    return Check("every acknowledged message consumed", tuple(problems + empty))


def end_state(
    under_replicated: list[str],
    reassigning: list[str],
    throttles: list[str],
    spool_pending: int,
    misplaced: list[str] = [],  # noqa: B006 - read only
) -> Check:
    problems = []
    if misplaced:
        problems.append(f"placement constraints broken: {misplaced[:10]}")
    if under_replicated:
        problems.append(
            f"{len(under_replicated)} partitions not fully replicated: {under_replicated[:10]}"
        )
    if reassigning:
        problems.append(f"{len(reassigning)} reassignments still running: {reassigning[:10]}")
    if throttles:
        problems.append(f"throttles left in place: {throttles[:10]}")
    if spool_pending < 0:
        problems.append("a manager's audit spool could not be read (its /metrics did not answer)")
    elif spool_pending:
        problems.append(f"{spool_pending} audit records left in the spool")
    return Check("the cluster whole at the end", tuple(problems))


def tail_readable(records: Iterable[AuditRecord], tailed_ids: list[str], tail_error: str) -> Check:
    """``kmedic actions tail`` printed every audit record, each once, and ended cleanly."""
    ids = [r.id for r in records]
    problems = [f"kmedic actions tail failed: {tail_error}"] if tail_error else []
    missing = sorted(set(ids) - set(tailed_ids))
    if missing:
        problems.append(f"{len(missing)} of {len(ids)} records not printed: {missing[:5]}")
    twice = sorted({i for i in tailed_ids if tailed_ids.count(i) > 1})
    if twice:
        problems.append(f"{len(twice)} records printed more than once: {twice[:5]}")
    return Check("every audit record readable by kmedic actions tail", tuple(problems))


def roles_running(died: list[str]) -> Check:
    """The roles that should be running at the end and are not."""
    problems = [f"{name} is not running at the end" for name in sorted(died)]
    return Check("every role running at the end", tuple(problems))


def in_order(records: Iterable[AuditRecord]) -> Check:
    """Each instance's records of one epoch, in the topic, in the order they were written (a
    record's time is taken when it is made; the spool replays in order)."""
    last: dict[tuple[str, int], AuditRecord] = {}
    problems = []
    for r in records:
        key = (r.instance, r.epoch)
        before = last.get(key)
        if before is not None and r.time_ms < before.time_ms:
            problems.append(
                f"{r.instance} (epoch {r.epoch}): {r.kind} of {r.time_ms} after "
                f"{before.kind} of {before.time_ms} (via {r.sink})"
            )
        last[key] = r
    return Check("the audit log in each manager's order", tuple(problems))


def lease_as_the_brokers_saw(seen: Iterable[Seen], cuts: Iterable[Cut], unread: str = "") -> Check:
    """No write request of a cut manager received by a broker after its lease could have
    ended (``IN_FLIGHT_MS`` later: a write sent at its last moment still arriving), nor after
    the first write of the manager that took over, until its link is back. ``seen``: every
    node's requests from kmedic's writers; ``unread``: why they could not be read.

    A Produce of its audit records is the exception: one sent within the lease to a broker
    that hung is appended when the broker resumes, however late, and nothing on the manager's
    side reaches it (the soak, seed 5150). Such a record changes nothing and names its epoch;
    readers put it back in epoch order (manager.audit.epoch_order). ``lease_verdicts`` tells
    each; every other write after the lease breaks the run."""
    cuts, writes = list(cuts), [s for s in seen if s.writes]
    problems = [unread] if unread else []
    for cut in cuts:
        within = [s for s in writes if cut.start_ms <= s.received_ms <= cut.end_ms]
        theirs = [s for s in within if s.instance == cut.instance and not s.audit_record]
        successor = [s.received_ms for s in within if s.instance != cut.instance]
        took_over = min(successor, default=cut.end_ms + 1)
        after = min(cut.lease_end_ms + IN_FLIGHT_MS, took_over)
        also = f", its successor wrote from +{took_over - cut.start_ms} ms" if successor else ""
        problems += [
            f"{s.sentence()}, {s.received_ms - cut.start_ms} ms into its cut off ZooKeeper "
            f"({cut.kind}): its lease had ended at {cut.lease_end_ms - cut.start_ms:+d} ms{also}"
            for s in theirs
            if s.received_ms >= after
        ]
    return Check(
        f"a cut manager's lease, as the brokers saw it: no write of its after the lease "
        f"({len(cuts)} cuts, {len(writes)} write requests of kmedic's in the request logs)",
        tuple(problems),
    )


def lease_verdicts(seen: Iterable[Seen], cuts: Iterable[Cut]) -> list[str]:
    """For the report: each cut's last write by the cut manager and first by its successor,
    as the brokers received them, against its lease's end."""
    writes = [s for s in seen if s.writes]
    lines = []
    for cut in cuts:
        within = [s for s in writes if cut.start_ms <= s.received_ms <= cut.end_ms]
        theirs = [s.received_ms - cut.start_ms for s in within if s.instance == cut.instance]
        others = [s.received_ms - cut.start_ms for s in within if s.instance != cut.instance]
        last = f"its last write at +{max(theirs)} ms" if theirs else "no write of its"
        first = f"the successor's first at +{min(others)} ms" if others else "no successor write"
        late = [
            s.received_ms - cut.start_ms
            for s in within
            if s.instance == cut.instance
            and s.audit_record
            and s.received_ms >= cut.lease_end_ms + IN_FLIGHT_MS
        ]
        delayed = (
            f"; its audit records appended after its lease, at +{', +'.join(map(str, late))} ms "
            "(a request held on its way, by a hung broker or the network: read back in epoch "
            "order)"
            if late
            else ""
        )
        lines.append(
            f"{cut.instance} cut off ZooKeeper ({cut.kind}, {cut.end_ms - cut.start_ms} ms): "
            f"lease over by {cut.lease_end_ms - cut.start_ms:+d} ms; {last}; {first}{delayed}"
        )
    return lines


BEHIND_SHARE = 1.2  # a run whose episodes took longer than this share of their estimate


def on_schedule(elapsed_s: float, estimated_s: float, judged: bool = True) -> Check:
    """The run kept to its schedule: its episodes took no more than ``BEHIND_SHARE`` of what
    they take on a good day. One that fell further behind ran on a machine too busy for its
    load, and its verdicts are of a different run than the one drawn. ``judged`` False (a
    run of a few episodes, whose length its start and its first failover dominate): said,
    not held against it."""
    ratio = elapsed_s / estimated_s if estimated_s else 0.0
    problems = (
        (
            f"the episodes took {elapsed_s / 60:.1f} minutes, {ratio:.2f}x the "
            f"{estimated_s / 60:.1f} minutes estimated: behind its schedule by more than a fifth",
        )
        if ratio > BEHIND_SHARE and judged
        else ()
    )
    return Check(
        f"the run kept to its schedule ({elapsed_s / 60:.1f} minutes of episodes, "
        f"{ratio:.2f}x the estimate; at most {BEHIND_SHARE}x"
        + ("" if judged else ", not judged in a run under 10 minutes")
        + ")",
        problems,
    )


def heal_times(timeline: Iterable[tuple[float, str]]) -> list[float]:
    """Each heal's time from its broker's kill to every partition whole (seconds), read off
    the run's timeline: "broker N killed" then "broker N healed: ..." (a heal episode's words;
    an isolated broker's heal is told the same way)."""
    killed: dict[str, float] = {}
    out = []
    for at, what in timeline:
        words = what.split(" ")
        if len(words) >= 3 and words[0] == "broker" and words[2] == "killed" and len(words) == 3:
            killed[words[1]] = at
        elif what.startswith("broker ") and " healed: " in what:
            broker = words[1]
            if broker in killed:
                out.append(round(at - killed.pop(broker), 1))
    return out
