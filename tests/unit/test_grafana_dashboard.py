"""The shipped Grafana dashboard (configs/grafana/kmedic.json): every panel's expression parses
with promtool, and names only metrics kmedic exports (the manager's, the streaming job's, the
agents'), each filtered only by labels that metric carries."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from required_tools import needs

from agent.metrics import AgentMetrics
from manager.web.metrics import ManagerMetrics
from streaming.metrics import StreamMetrics

DASHBOARD = Path(__file__).resolve().parents[2] / "configs" / "grafana" / "kmedic.json"
PROMTOOL = shutil.which("promtool")
needs_promtool = needs(
    PROMTOOL is None,
    "promtool not on PATH (Debian package `prometheus`; scripts/bootstrap.py installs it)",
)
# Grafana's variables, as a query would see them.
VARIABLES = {"$__rate_interval": "5m", "$cluster": "c1"}
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def expressions() -> list[tuple[str, str]]:
    """(panel title, expression with Grafana's variables filled in), every target."""
    doc = json.loads(DASHBOARD.read_text())
    out = []
    for panel in doc["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            for name, value in VARIABLES.items():
                expr = expr.replace(name, value)
            out.append((panel["title"], expr))
    return out


def exported() -> dict[str, set[str]]:
    """Every series name kmedic's processes export, with the labels it carries."""
    registries = [
        ManagerMetrics("c1").registry,
        StreamMetrics("c1").registry,
        AgentMetrics(1).registry,
    ]
    out: dict[str, set[str]] = {}
    for registry in registries:
        for family in registry.collect():
            collector: Any = registry._names_to_collectors.get(family.name)
            if collector is None:
                collector = registry._names_to_collectors.get(family.name + "_total")
            labels = set(getattr(collector, "_labelnames", ()))
            kind = family.type if family.type in SUFFIXES else "gauge"
            for suffix in SUFFIXES[kind]:
                out[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
    return out


def test_the_dashboard_has_panels_for_what_on_call_watches() -> None:
    exprs = " ".join(e for _, e in expressions())
    for metric in (
        "kmedic_decision_reasons_total",  # refusals and their reasons
        "kmedic_plan_bytes",  # moves in flight with progress
        "kmedic_load_data_age_seconds",  # stale loads
        "kmedic_unsafe_topics",
        "kmedic_readiness_unhealable",
        "kmedic_quorum_voters",
        "kmedic_broker_slowness_score",
    ):
        assert metric in exprs, metric


def problems(expr: str, known: dict[str, set[str]]) -> list[str]:
    """What is wrong with one expression's metrics: none read, unknown ones, unknown labels."""
    used = set(re.findall(r"\bkmedic_[a-z_]+", expr))
    if not used:
        return ["reads no kmedic metric"]
    if not used <= set(known):
        return [f"unknown metrics {sorted(used - set(known))}"]
    out = []
    for name, matchers in re.findall(r"\b(kmedic_[a-z_]+)\{([^}]*)\}", expr):
        labels = set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", matchers))
        if not labels <= known[name]:
            out.append(f"{name} has no labels {sorted(labels - known[name])}")
    return out


def promtool_check(exprs: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    rules = [{"record": f"kmedic:dashboard:{n}", "expr": e} for n, e in enumerate(exprs)]
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    return subprocess.run(
        [str(PROMTOOL), "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )


def test_every_expression_names_only_metrics_kmedic_exports_by_their_labels() -> None:
    known = exported()
    found = {f"{t}: {e}": problems(e, known) for t, e in expressions()}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_metric_check_catches_unknown_metrics_and_labels() -> None:
    known = exported()
    assert problems("kmedic_no_such_metric", known) == ["unknown metrics ['kmedic_no_such_metric']"]
    assert problems('kmedic_agent_samples_total{cluster="c1"}', known) == [
        "kmedic_agent_samples_total has no labels ['cluster']"
    ]
    assert problems("up", known) == ["reads no kmedic metric"]


@needs_promtool
def test_every_expression_parses_with_promtool(tmp_path: Path) -> None:
    proc = promtool_check([e for _, e in expressions()], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_promtool
def test_promtool_refuses_a_broken_expression(tmp_path: Path) -> None:
    assert promtool_check(["sum(kmedic_dead_brokers"], tmp_path).returncode != 0
