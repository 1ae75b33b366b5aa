"""The manager's read-only status page (DESIGN §7): brokers, loads, moves, alerts and the most
recent audit records, as JSON (``/status.json``) and as one HTML page (``/status``).

Both are pure renderings of what the daemon already holds: the last snapshot and decision,
the alerts it keeps active, its moves and the audit records it wrote most recently.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from manager.analyzer.health import in_grace
from manager.audit.log import AuditRecord, render_line
from manager.executor.move_state import MoveState
from manager.model.decision import BrokerLoad, Decision
from manager.model.plan_progress import PlanProgress
from manager.model.snapshot import Snapshot
from manager.web.charts import limit_bars, load_chart
from manager.web.load_history import DEFAULT_SPAN_S


def status_document(
    *,
    cluster: str,
    instance: str,
    leader: bool,
    epoch: int,
    snapshot: Snapshot | None,
    decision: Decision | None,
    alerts: Mapping[str, str],
    moves: Iterable[MoveState],
    recent: Iterable[AuditRecord],
    requests: Iterable[Mapping[str, Any]] = (),
    history: Mapping[int, Sequence[tuple[int, float]]] | None = None,
    history_span_ms: int = DEFAULT_SPAN_S * 1000,
    now_ms: int | None = None,
    now_monotonic: float | None = None,
    mode: str = "act",
    mode_source: str = "config",
    progress: PlanProgress | None = None,
    readiness: Mapping[str, Any] | None = None,
    cordoned_by: Callable[[int], str] = lambda _: "unknown",
) -> dict[str, Any]:
    """``history``: LoadHistory.series(); ``now_monotonic``: the executor's clock, for how long
    each move has run; ``progress``: where the running plan stands; ``readiness``: the last
    failure-readiness sweep (ReadinessSweep.shown()); ``cordoned_by``: who set a cordoned
    broker's cordon (CordonKeeper.by_whom)."""
    loads = decision.loads_before if decision else {}
    limits = snapshot.policy.limits if snapshot else None
    return {
        "cluster": cluster,
        "instance": instance,
        "leader": leader,
        "epoch": epoch,
        "mode": mode,
        "mode_source": mode_source,  # flag, run_time or config (manager/daemon/mode.py)
        "generated_at_ms": now_ms if now_ms is not None else int(time.time() * 1000),
        "snapshot_taken_at_ms": snapshot.taken_at if snapshot else None,
        "last_decision": {
            "outcome": decision.outcome,
            "kind": decision.kind,
            "summary": decision.summary,
            "reasons": [r.to_dict() for r in decision.reasons],
            # Why a decision to act was kept from the cluster (observe mode, a switch).
            "would_act": decision.would_act,
        }
        if decision
        else None,
        "brokers": _brokers(snapshot, loads) if snapshot else [],
        # Every cordoned broker, kmedic's own and others' (issue 71.7).
        "cordons": cordon_rows(snapshot, cordoned_by),
        "active_alerts": dict(sorted(alerts.items())),
        "moves": [
            {
                "partition": m.move.key,
                "from": list(m.original),
                "to": list(m.move.target),
                "bytes": m.move.size_bytes,
                "status": m.status,
                "running_s": round(now_monotonic - m.started_at, 1)
                if now_monotonic is not None and m.started_at is not None
                else None,
                "stalled": m.stalled,
            }
            for m in moves
        ],
        "plan_progress": {**progress.to_field(), "sentence": progress.sentence()}
        if progress is not None
        else None,
        # Operator requests as last read from ZooKeeper, oldest first (the order served).
        # Open requests, and those that ended within FINISHED_SHOWN_S (14 finished drains
        # filled a screen); every request stays in ZooKeeper and in `kmedic requests list`.
        "requests": _shown_requests(requests, now_ms),
        "history": {
            "span_ms": history_span_ms,
            # The chart's limit line: the lower of the two network limits.
            "network_limit": min(limits.network_in_fraction, limits.network_out_fraction)
            if limits
            else None,
            "series": {str(b): [list(p) for p in pts] for b, pts in (history or {}).items()},
        },
        "readiness": dict(readiness) if readiness else None,
        # Newest first: what on-call wants to see at the top.
        "recent_audit": [
            {"line": render_line(r), "kind": r.kind, "time_ms": r.time_ms, "id": r.id}
            for r in reversed(list(recent))
        ],
    }


def cordon_rows(snapshot: Snapshot | None, by: Callable[[int], str]) -> list[dict[str, Any]]:
    """Every cordoned broker of the snapshot and who set its cordon."""
    brokers = snapshot.brokers if snapshot is not None else ()
    return [{"broker": b.id, "by": by(b.id)} for b in brokers if b.cordoned]


def _brokers(snap: Snapshot, loads: Mapping[int, BrokerLoad]) -> list[dict[str, Any]]:
    explicit = {b: d.name for d in snap.failure_domains for b in d.brokers}
    waiting = set(in_grace(snap))
    grace = snap.policy.dead_grace_ms
    lim = snap.policy.limits
    fractions = {
        "network_in_bytes_per_s": lim.network_in_fraction,
        "network_out_bytes_per_s": lim.network_out_fraction,
        "disk_bytes": lim.disk_fraction,
    }
    out = []
    for b in snap.brokers:
        load = loads.get(b.id)
        cap = b.capacity or snap.default_capacity
        assert cap is not None  # guaranteed by snapshot validation
        capacity = {
            "network_in_bytes_per_s": cap.network_in_bytes_per_s,
            "network_out_bytes_per_s": cap.network_out_bytes_per_s,
            "disk_bytes": cap.disk_bytes,
        }
        state = "alive" if b.alive else "waiting" if b.id in waiting else "dead"
        out.append(
            {
                "id": b.id,
                "rack": b.rack,
                "domain": explicit.get(b.id, b.rack or "(no rack)"),
                "alive": b.alive,
                "state": state,
                "dead_since_ms": b.dead_since_ms,
                "grace_ends_ms": b.grace_ends_ms(grace) if state == "waiting" else None,
                "last_stats_ms": b.last_stats_ms,
                "load": load.to_dict() if load else None,
                "capacity": capacity,
                "limits": {k: v * fractions[k] for k, v in capacity.items()},
                "slowness": b.slowness.model_dump() if b.slowness else None,
                "death": b.death.model_dump() if b.death else None,
            }
        )
    return out


BROKER_COLUMNS = [
    "id",
    "rack",
    "state",
    "last stats",
    "net in MB/s",
    "net out MB/s",
    "disk GB",
    "replicas",
    "leaders",
]


def _ms(value: int | None) -> str:
    if value is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(value / 1000)) + "Z"


def _table(headers: list[str], rows: list[list[str]], empty: str) -> str:
    if not rows:
        return f"<p><em>{html.escape(empty)}</em></p>"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


MODE_SOURCES = {
    "flag": "from --mode on this instance's command line",
    "run_time": "set at run time (kmedic mode)",
    "config": "from the config",
}


def _mode_banner(mode: str, source: str) -> str:
    where = html.escape(MODE_SOURCES.get(source, source))
    if mode != "observe":
        return f"<p id='mode'>mode: act ({where})</p>"
    return (
        f"<p id='mode'><strong>mode: observe</strong> ({where}): kmedic decides and audits "
        "what it would do (would_act), and writes nothing to the cluster</p>"
    )


FINISHED_SHOWN_S = 24 * 3600


def _shown_requests(requests: Iterable[Mapping[str, Any]], now_ms: int | None) -> list[Any]:
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    ended = ("done", "partial", "failed", "cancelled")
    return [
        dict(r)
        for r in requests
        if r.get("state") not in ended
        or now - int(r.get("updated_ms", now)) <= FINISHED_SHOWN_S * 1000
    ]


def render_html(doc: Mapping[str, Any]) -> str:
    decision = doc["last_decision"]
    role = f"leader, epoch {doc['epoch']}" if doc["leader"] else "standby"
    history = doc["history"]
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<meta http-equiv='refresh' content='10'>",
        f"<title>kmedic {html.escape(doc['cluster'])}</title>",
        "<style>body{font-family:sans-serif}td,th{padding:2px 8px;text-align:left}"
        "table{border-collapse:collapse}tr:nth-child(even){background:#f3f3f3}"
        ".legend{margin-right:10px;white-space:nowrap}</style>",
        "</head><body>",
        f"<h1>kmedic: cluster {html.escape(doc['cluster'])}</h1>",
        f"<p>instance {html.escape(doc['instance'])} ({html.escape(role)}); snapshot "
        f"{_ms(doc['snapshot_taken_at_ms'])}; page {_ms(doc['generated_at_ms'])}</p>",
        _mode_banner(str(doc.get("mode", "act")), str(doc.get("mode_source", "config"))),
        _section("decision", "Last decision", _decision(decision)),
        _section(
            "alerts",
            "Active alerts",
            _table(["alert", "why"], [[k, v] for k, v in doc["active_alerts"].items()], "none"),
        ),
        _section("down", "Dead and waiting brokers", _down(doc["brokers"])),
        _section(
            "limits",
            "Load against limits (bar: share of capacity; tick: the limit)",
            limit_bars(doc["brokers"]) if doc["brokers"] else "<p><em>no snapshot yet</em></p>",
        ),
        _section(
            "history",
            f"Network load, the last {history['span_ms'] / 3_600_000:g} h at most (in + out, "
            "share of capacity)",
            load_chart(history["series"], history["network_limit"] or 1.0, history["span_ms"]),
        ),
        _section("moves", "Moves", _moves(doc["moves"], doc["plan_progress"])),
        _section("requests", "Operator requests", _requests(doc["requests"])),
        _section(
            "cordons",
            "Cordoned brokers (no new replica)",
            _table(
                ["broker", "cordoned by"],
                [[str(c["broker"]), c["by"]] for c in doc["cordons"]],
                "none",
            ),
        ),
        _section("readiness", "Failure readiness", _readiness(doc.get("readiness"))),
        _section("brokers", "Brokers", _table(BROKER_COLUMNS, _broker_rows(doc), "none")),
        _section(
            "audit",
            "Recent audit records",
            _table(["record"], [[r["line"]] for r in doc["recent_audit"]], "none yet"),
        ),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _section(anchor: str, title: str, body: str) -> str:
    return f'<section id="{anchor}"><h2>{html.escape(title)}</h2>{body}</section>'


def _decision(decision: Mapping[str, Any] | None) -> str:
    if not decision:
        return "<p><em>no decision yet (a standby, or the first cycle)</em></p>"
    # An observe-mode decision is headed for what it is: "would act", not "noop".
    heading = "would act" if decision.get("would_act") else decision["outcome"]
    return (
        f"<p><strong>{html.escape(heading)}</strong>: "
        f"{html.escape(decision['summary'])}</p>"
        + _table(
            ["reason", "why"],
            [[r["code"], r["message"]] for r in decision["reasons"]],
            "no reasons given",
        )
    )


def _down(brokers: Iterable[Mapping[str, Any]]) -> str:
    rows = [
        [
            str(b["id"]),
            b["domain"],
            f"{b['state']}, {d['kind']}: {d['evidence']}" if (d := b.get("death")) else b["state"],
            _ms(b["dead_since_ms"]),
            _ms(b["grace_ends_ms"]) if b["state"] == "waiting" else "over: may be healed",
        ]
        for b in brokers
        if b["state"] != "alive"
    ]
    return _table(["broker", "domain", "state", "dead since", "grace ends"], rows, "none")


def _readiness(ready: Mapping[str, Any] | None) -> str:
    if not ready:
        return "<p>no sweep yet (the leader sweeps every readiness.period_s)</p>"
    head = (
        f"<p>{html.escape(ready['summary'].split(';')[0])}, swept {_ms(ready['swept_at_ms'])}</p>"
    )
    rows = [[s["sentence"]] for s in ready["scenarios"] if not s["healable"]]
    settings = [[s] for s in ready.get("replication_settings_off", [])]
    return (
        head
        + _table(["loss that would not be fully healed"], rows, "none")
        + _table(
            ["broker setting a heal's throttled copy is not measured at (docs/executor.md)"],
            settings,
            "none: every live broker replicates as kmedic's throttle expects",
        )
    )


def _moves(moves: list[Mapping[str, Any]], progress: Mapping[str, Any] | None) -> str:
    running = sum(1 for m in moves if m["status"] == "in_flight")
    summary = f"<p>{running} in flight, {len(moves) - running} queued</p>" if moves else ""
    if progress is not None:
        summary += f"<p>Plan: {html.escape(progress['sentence'])}</p>"
    rows = [
        [
            m["partition"],
            str(m["from"]),
            str(m["to"]),
            f"{m['bytes'] / 1e9:.2f}",
            m["status"] + (", NO PROGRESS" if m["stalled"] else ""),
            "-" if m["running_s"] is None else f"{m['running_s']:.0f} s",
        ]
        for m in moves
    ]
    headers = ["partition", "from", "to", "GB", "status", "running for"]
    return summary + _table(headers, rows, "no move in flight")


def _request_target(r: Mapping[str, Any]) -> str:
    """Its brokers, or for a set_rf its topic and factor."""
    if r.get("topic") is not None:
        return f"topic {r['topic']}, RF {r['replication_factor']}"
    return "brokers " + ", ".join(map(str, r["brokers"]))


def _requests(requests: list[Mapping[str, Any]]) -> str:
    rows = [
        [
            r["id"],
            r["kind"],
            _request_target(r),
            r["state"],
            r["by"],
            _ms(r["updated_ms"]),
            r["note"],
        ]
        for r in requests
    ]
    headers = ["request", "kind", "of", "state", "by", "updated", "last note"]
    return _table(headers, rows, "none stored (kmedic drain, fill or demote)")


def _broker_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    mb = 1e6
    for b in doc["brokers"]:
        load = b["load"] or {}
        state = {"alive": "alive", "waiting": "WAITING (grace)", "dead": "DEAD"}[b["state"]]
        if b["state"] != "alive":
            state += f" since {_ms(b['dead_since_ms'])}"
        elif (slow := b["slowness"]) and slow["state"] != "ok":
            state += f", {slow['state'].upper()} (score {slow['score']:.1f})"
        rows.append(
            [
                str(b["id"]),
                b["rack"] or "-",
                state,
                _ms(b["last_stats_ms"]),
                f"{load['network_in_bytes_per_s'] / mb:.2f}" if load else "-",
                f"{load['network_out_bytes_per_s'] / mb:.2f}" if load else "-",
                f"{load['disk_bytes'] / 1e9:.2f}" if load else "-",
                str(load.get("replicas", "-")),
                str(load.get("leaders", "-")),
            ]
        )
    return rows
