"""The status page's pictures, as inline SVG rendered on the server (no script, no build step).

- ``limit_bars``: per broker, network in, network out and disk as bars against the broker's
  capacity, with a tick at its limit, grouped by failure domain (the rack unless the config
  names domains). A bar past its limit is red; a dead broker's bars are grey.
- ``load_chart``: each broker's network load (in + out over capacity) over the kept history,
  one line per broker, with the network limit as a dashed line.

Both read the status document's plain data, and mark every element a reader or a test looks
for with a class and ``data-`` attributes.
"""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from itertools import groupby
from typing import Any

METRICS = (
    ("network_in_bytes_per_s", "in"),
    ("network_out_bytes_per_s", "out"),
    ("disk_bytes", "disk"),
)
LABEL_W = 120
BAR_W = 160
BAR_H = 10
ROW_H = BAR_H + 10
GROUP_H = 20
OK, OVER, DEAD = "#4c9a2a", "#c62828", "#9e9e9e"


def limit_bars(brokers: Sequence[Mapping[str, Any]]) -> str:
    """One block of three bars per broker, grouped by ``domain`` (in page order)."""
    rows: list[str] = []
    y = 0
    ordered = sorted(brokers, key=lambda b: (str(b["domain"]), b["id"]))
    for domain, members in groupby(ordered, key=lambda b: str(b["domain"])):
        rows.append(
            f'<text class="domain" x="0" y="{y + 14}" font-weight="bold">'
            f"{html.escape(domain)}</text>"
        )
        y += GROUP_H
        for b in members:
            rows.append(_broker_bars(b, y))
            y += ROW_H
    width = LABEL_W + 3 * (BAR_W + 40)
    return (
        f'<svg class="limit-bars" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{max(y, 20)}" font-family="sans-serif" font-size="11">' + "".join(rows) + "</svg>"
    )


def _broker_bars(b: Mapping[str, Any], y: int) -> str:
    load = b.get("load") or {}
    caps, limits = b["capacity"], b["limits"]
    state = str(b["state"])
    parts = [
        f'<g class="broker" data-broker="{b["id"]}" data-state="{html.escape(state)}">',
        f'<text x="0" y="{y + BAR_H - 1}">broker {b["id"]}'
        + ("" if state == "alive" else f" ({html.escape(state)})")
        + "</text>",
    ]
    for i, (key, label) in enumerate(METRICS):
        x = LABEL_W + i * (BAR_W + 40)
        cap, limit, value = float(caps[key]), float(limits[key]), load.get(key)
        share = min(float(value) / cap, 1.0) if value is not None else 0.0
        over = value is not None and float(value) > limit
        color = DEAD if state != "alive" else OVER if over else OK
        tick = x + BAR_W * limit / cap
        title = f"broker {b['id']} {label}: " + (
            "no load figure" if value is None else f"{_percent(float(value) / cap)} of capacity"
        )
        parts += [
            f'<g class="bar" data-metric="{label}" data-over="{str(over).lower()}">',
            f"<title>{html.escape(title)}</title>",
            f'<rect x="{x}" y="{y}" width="{BAR_W}" height="{BAR_H}" fill="#eeeeee"/>',
            f'<rect class="fill" x="{x}" y="{y}" width="{BAR_W * share:.1f}" '
            f'height="{BAR_H}" fill="{color}"/>',
            f'<line class="limit" x1="{tick:.1f}" x2="{tick:.1f}" y1="{y - 2}" '
            f'y2="{y + BAR_H + 2}" stroke="#000000"/>',
            f'<text x="{x + BAR_W + 4}" y="{y + BAR_H - 1}">{label}</text>',
            "</g>",
        ]
    parts.append("</g>")
    return "".join(parts)


CHART_W, CHART_H, PAD_L, PAD_B = 640, 220, 44, 24
MIN_AXIS_MS = 60_000  # a single point is drawn on a minute's axis


def load_chart(
    series: Mapping[str, Sequence[Sequence[float]]], network_limit: float, span_ms: int
) -> str:
    """Lines of network utilisation (a fraction) against time: the last ``span_ms`` at most,
    the axis spanning the points there are (a manager up for two minutes draws two minutes
    across the chart, not a 6-hour axis with its data in the last pixel)."""
    points = [p for pts in series.values() for p in pts]
    if not points:
        return '<p class="no-history"><em>no load history yet</em></p>'
    end = max(p[0] for p in points)
    start = max(end - span_ms, min(p[0] for p in points))
    width = max(end - start, MIN_AXIS_MS)
    top = max(1.0, max(p[1] for p in points) * 1.1)

    def xy(t: float, v: float) -> str:
        x = PAD_L + (CHART_W - PAD_L) * (t - start) / width
        y = (CHART_H - PAD_B) * (1 - v / top)
        return f"{x:.1f},{y:.1f}"

    lines = []
    for i, (broker, pts) in enumerate(sorted(series.items(), key=lambda kv: int(kv[0]))):
        color = _color(i)
        coords = " ".join(xy(t, v) for t, v in pts if t >= start)
        lines.append(
            f'<polyline class="series" data-broker="{html.escape(str(broker))}" '
            f'points="{coords}" fill="none" stroke="{color}" stroke-width="1.5">'
            f"<title>broker {html.escape(str(broker))}</title></polyline>"
        )
    limit_y = (CHART_H - PAD_B) * (1 - network_limit / top)
    axis = [
        f'<line x1="{PAD_L}" y1="0" x2="{PAD_L}" y2="{CHART_H - PAD_B}" stroke="#000000"/>',
        f'<line x1="{PAD_L}" y1="{CHART_H - PAD_B}" x2="{CHART_W}" y2="{CHART_H - PAD_B}" '
        'stroke="#000000"/>',
        f'<line class="network-limit" x1="{PAD_L}" y1="{limit_y:.1f}" x2="{CHART_W}" '
        f'y2="{limit_y:.1f}" stroke="#c62828" stroke-dasharray="4 3"/>',
        f'<text x="{CHART_W - 4}" y="{limit_y - 3:.1f}" text-anchor="end" fill="#c62828">'
        f"limit {_percent(network_limit)}</text>",
        f'<text x="{PAD_L - 4}" y="10" text-anchor="end">{_percent(top)}</text>',
        f'<text x="{PAD_L - 4}" y="{CHART_H - PAD_B}" text-anchor="end">0%</text>',
        f'<text x="{PAD_L}" y="{CHART_H - 6}">{_clock(start)}</text>',
        f'<text x="{CHART_W}" y="{CHART_H - 6}" text-anchor="end">{_clock(end)}</text>',
    ]
    legend = "".join(
        f'<span class="legend" data-broker="{html.escape(str(broker))}" '
        f'style="color:{_color(i)}">&#9632; broker {html.escape(str(broker))}'
        "</span> "
        for i, broker in enumerate(sorted(series, key=int))
    )
    return (
        f'<svg class="load-chart" xmlns="http://www.w3.org/2000/svg" width="{CHART_W}" '
        f'height="{CHART_H}" font-family="sans-serif" font-size="11">'
        + "".join(axis + lines)
        + f"</svg><p>{legend}</p>"
    )


def _color(i: int) -> str:
    return f"hsl({(i * 137) % 360},65%,40%)"  # the golden angle: neighbours differ


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def _clock(ms: float) -> str:
    return time.strftime("%H:%M", time.gmtime(ms / 1000)) + "Z"
