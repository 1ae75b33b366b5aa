"""The shipped alert rules: valid, unit-tested with promtool, and about metrics that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import yaml
from required_tools import needs

from manager.web.metrics import ManagerMetrics
from streaming.metrics import StreamMetrics

RULES_DIR = Path(__file__).resolve().parents[2] / "configs" / "prometheus"
PROMTOOL = shutil.which("promtool")
needs_promtool = needs(
    PROMTOOL is None,
    "promtool not on PATH (Debian package `prometheus`; scripts/bootstrap.py installs it)",
)
REQUIRED_ALERTS = {
    "KmedicRefusingToHeal",
    "KmedicObserveModeWouldHeal",
    "KmedicUnexplainedUnderReplication",
    "KmedicStaleLoadData",
    "KmedicNoLeader",
    "KmedicStuckMove",
    "KmedicAuditOnFailover",
    "KmedicClusterUnobservable",
    "KmedicCyclesStalled",
}


class Standby:
    """A coordinator that does not lead, as the leadership gauges read it."""

    epoch = 0
    connected = False

    def may_act(self) -> bool:
        return False


def rules() -> list[dict[str, object]]:
    doc = yaml.safe_load((RULES_DIR / "alerts.yml").read_text())
    return [rule for group in doc["groups"] for rule in group["rules"]]


@needs_promtool
def test_promtool_accepts_the_rules() -> None:
    proc = subprocess.run(
        [str(PROMTOOL), "check", "rules", str(RULES_DIR / "alerts.yml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_promtool
def test_promtool_unit_tests_of_the_rules_pass() -> None:
    proc = subprocess.run(
        [str(PROMTOOL), "test", "rules", "alerts.test.yml"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=RULES_DIR,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_every_required_alert_is_shipped_and_tested() -> None:
    names = {str(rule["alert"]) for rule in rules()}
    assert names >= REQUIRED_ALERTS
    tests = yaml.safe_load((RULES_DIR / "alerts.test.yml").read_text())["tests"]
    tested = {
        case["alertname"]
        for test in tests
        for case in test.get("alert_rule_test", [])
        if case.get("exp_alerts")
    }
    assert tested == names, f"alerts never seen firing in alerts.test.yml: {names - tested}"


def test_rules_only_use_metrics_kmedic_exports() -> None:
    """Every metric a rule reads is exported by the manager or the streaming job."""
    metrics = ManagerMetrics("c1")
    # Every metric appears once the daemon has reported each fact.
    metrics.observe_loads(age_s=1, valid_fraction=1)
    metrics.moves.observe_moves(in_flight=0, oldest_age_s=0, stuck=0)
    metrics.follow_leadership(Standby())
    metrics.observe_audit(on_failover=False, spool_pending=0)
    metrics.observe_observable(True)
    metrics.observe_cycle(seconds=0.5, finished_at_s=1.0)
    stream = StreamMetrics("c1")
    stream.record_progress(
        {
            "name": "kmedic-loads",
            "runId": "r",
            "batchId": 0,
            "numInputRows": 1,
            "timestamp": "2026-11-22T15:51:04.477Z",
            "durationMs": {"triggerExecution": 1},
        }
    )
    families = [*metrics.registry.collect(), *stream.registry.collect()]
    exported = {f.name for f in families} | {s.name for f in families for s in f.samples}
    for rule in rules():
        used = set(re.findall(r"\bkmedic_[a-z_]+", str(rule["expr"])))
        assert used, rule["alert"]
        assert used <= exported, f"{rule['alert']} uses unknown metrics {used - exported}"
