"""The manager's read-only status page (DESIGN §7): brokers, loads, moves, alerts and the most
recent audit records, as JSON (``/status.json``) and as one HTML page (``/status``).

Both are pure renderings of what the daemon already holds: the last snapshot and decision,
the alerts it keeps active, its moves and the audit records it wrote most recently.
"""

from __future__ import annotations

import html
import time
from collections.abc import Iterable, Mapping
from typing import Any

from manager.audit.log import AuditRecord, render_line
from manager.executor.executor import MoveState
from manager.model.decision import Decision
from manager.model.snapshot import Snapshot


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
    now_ms: int | None = None,
) -> dict[str, Any]:
    loads = decision.loads_before if decision else {}
    brokers = []
    for b in snapshot.brokers if snapshot else ():
        load = loads.get(b.id)
        brokers.append(
            {
                "id": b.id,
                "rack": b.rack,
                "alive": b.alive,
                "dead_since_ms": b.dead_since_ms,
                "last_stats_ms": b.last_stats_ms,
                "load": load.to_dict() if load else None,
            }
        )
    return {
        "cluster": cluster,
        "instance": instance,
        "leader": leader,
        "epoch": epoch,
        "generated_at_ms": now_ms if now_ms is not None else int(time.time() * 1000),
        "snapshot_taken_at_ms": snapshot.taken_at if snapshot else None,
        "last_decision": {
            "outcome": decision.outcome,
            "kind": decision.kind,
            "summary": decision.summary,
            "reasons": [r.to_dict() for r in decision.reasons],
        }
        if decision
        else None,
        "brokers": brokers,
        "active_alerts": dict(sorted(alerts.items())),
        "moves": [
            {
                "partition": m.move.key,
                "from": list(m.original),
                "to": list(m.move.target),
                "status": m.status,
                "timed_out": m.timed_out,
            }
            for m in moves
        ],
        # Operator requests as last read from ZooKeeper, oldest first (the order served).
        "requests": [dict(r) for r in requests],
        # Newest first: what on-call wants to see at the top.
        "recent_audit": [
            {"line": render_line(r), "kind": r.kind, "time_ms": r.time_ms, "id": r.id}
            for r in reversed(list(recent))
        ],
    }


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


def render_html(doc: Mapping[str, Any]) -> str:
    decision = doc["last_decision"]
    role = f"leader, epoch {doc['epoch']}" if doc["leader"] else "standby"
    brokers = []
    for b in doc["brokers"]:
        load = b["load"] or {}
        mb = 1e6
        brokers.append(
            [
                str(b["id"]),
                b["rack"] or "-",
                "alive" if b["alive"] else f"DEAD since {_ms(b['dead_since_ms'])}",
                _ms(b["last_stats_ms"]),
                f"{load['network_in_bytes_per_s'] / mb:.2f}" if load else "-",
                f"{load['network_out_bytes_per_s'] / mb:.2f}" if load else "-",
                f"{load['disk_bytes'] / 1e9:.2f}" if load else "-",
                str(load.get("replicas", "-")),
                str(load.get("leaders", "-")),
            ]
        )
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<meta http-equiv='refresh' content='10'>",
        f"<title>kmedic {html.escape(doc['cluster'])}</title>",
        "<style>body{font-family:sans-serif}td,th{padding:2px 8px;text-align:left}"
        "table{border-collapse:collapse}tr:nth-child(even){background:#f3f3f3}</style>",
        "</head><body>",
        f"<h1>kmedic: cluster {html.escape(doc['cluster'])}</h1>",
        f"<p>instance {html.escape(doc['instance'])} ({html.escape(role)}); snapshot "
        f"{_ms(doc['snapshot_taken_at_ms'])}; page {_ms(doc['generated_at_ms'])}</p>",
        "<h2>Last decision</h2>",
    ]
    if decision:
        parts.append(
            f"<p><strong>{html.escape(decision['outcome'])}</strong>: "
            f"{html.escape(decision['summary'])}</p>"
        )
        parts.append(
            _table(
                ["reason", "why"],
                [[r["code"], r["message"]] for r in decision["reasons"]],
                "no reasons given",
            )
        )
    else:
        parts.append("<p><em>no decision yet (a standby, or the first cycle)</em></p>")
    parts += [
        "<h2>Active alerts</h2>",
        _table(["alert", "why"], [[k, v] for k, v in doc["active_alerts"].items()], "none"),
        "<h2>Brokers</h2>",
        _table(
            BROKER_COLUMNS,
            brokers,
            "no snapshot yet",
        ),
        "<h2>Moves</h2>",
        _table(
            ["partition", "from", "to", "status"],
            [
                [
                    m["partition"],
                    str(m["from"]),
                    str(m["to"]),
                    m["status"] + (", TIMED OUT" if m["timed_out"] else ""),
                ]
                for m in doc["moves"]
            ],
            "no move in flight",
        ),
        "<h2>Operator requests</h2>",
        _table(
            ["request", "kind", "brokers", "state", "by", "updated", "last note"],
            [
                [
                    r["id"],
                    r["kind"],
                    ", ".join(map(str, r["brokers"])),
                    r["state"],
                    r["by"],
                    _ms(r["updated_ms"]),
                    r["note"],
                ]
                for r in doc["requests"]
            ],
            "none stored (kmedic drain, fill or demote)",
        ),
        "<h2>Recent audit records</h2>",
        _table(["record"], [[r["line"]] for r in doc["recent_audit"]], "none yet"),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
