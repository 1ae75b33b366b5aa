"""The manager's metrics and its /metrics and /healthz server (a real local HTTP server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from api_support import serve
from helpers import http_get
from prometheus_client.parser import text_string_to_metric_families

from kmedic.errors import KmedicError
from manager.web.metrics import ManagerMetrics


@dataclass
class Leading:
    """The coordinator as the leadership gauges read it."""

    epoch: int
    connected: bool = True
    leading: bool = True

    def may_act(self) -> bool:
        return self.leading and self.connected


def value(m: ManagerMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, {"cluster": "c1", **labels})


def test_decisions_reasons_and_refusal_to_heal() -> None:
    m = ManagerMetrics("c1")
    m.record_decision("refuse", ["dead_brokers_over_max", "unexplained_urp"], heal_needed=True)
    m.record_decision("refuse", ["dead_brokers_over_max"], heal_needed=True)
    assert value(m, "kmedic_decisions_total", outcome="refuse") == 2
    assert value(m, "kmedic_decisions_total", outcome="act") == 0
    assert (
        value(m, "kmedic_decision_reasons_total", outcome="refuse", reason="dead_brokers_over_max")
        == 2
    )
    assert value(m, "kmedic_refusing_to_heal") == 1
    assert value(m, "kmedic_last_decision", outcome="refuse") == 1
    m.record_decision("act", ["heal"], heal_needed=True)
    assert value(m, "kmedic_refusing_to_heal") == 0
    assert value(m, "kmedic_last_decision", outcome="refuse") == 0
    assert value(m, "kmedic_last_decision", outcome="act") == 1
    with pytest.raises(KmedicError, match="unknown decision outcome 'maybe'"):
        m.record_decision("maybe", [])  # type: ignore[arg-type]


def test_cluster_actions_moves_durations_leadership_audit() -> None:
    m = ManagerMetrics("c1")
    m.observe_cluster(dead_brokers=1, waiting_brokers=1, urp_explained=12, urp_unexplained=0)
    m.record_action("reassign", "started", 3)
    m.record_action("reassign", "completed", 2)
    m.moves.observe_moves(in_flight=1, oldest_age_s=42.0, stuck=0)
    m.moves.add_bytes_moved(1_000_000)
    m.observe_plan(0.2)
    m.observe_cycle(1.5, finished_at_s=1_700_000_000)
    m.observe_loads(age_s=30, valid_fraction=0.97)
    m.follow_leadership(Leading(epoch=9))
    m.observe_audit(on_failover=True, spool_pending=4)
    m.count_audit_record("spool")
    assert value(m, "kmedic_dead_brokers") == 1
    assert value(m, "kmedic_waiting_brokers") == 1
    assert value(m, "kmedic_under_replicated_partitions", explained="true") == 12
    assert value(m, "kmedic_actions_total", type="reassign", result="completed") == 2
    assert value(m, "kmedic_moves_in_flight") == 1
    assert value(m, "kmedic_oldest_move_age_seconds") == 42
    assert value(m, "kmedic_bytes_moved_total") == 1_000_000
    assert value(m, "kmedic_plan_duration_seconds_count") == 1
    assert value(m, "kmedic_cycle_duration_seconds_sum") == 1.5
    assert value(m, "kmedic_last_cycle_timestamp_seconds") == 1_700_000_000
    assert value(m, "kmedic_load_data_valid_fraction") == 0.97
    assert value(m, "kmedic_fencing_epoch") == 9 and value(m, "kmedic_is_leader") == 1
    assert value(m, "kmedic_audit_on_failover") == 1
    assert value(m, "kmedic_audit_spool_pending") == 4
    assert value(m, "kmedic_audit_records_total", sink="spool") == 1


class Health:
    def __init__(self) -> None:
        self.ok = True

    def __call__(self) -> tuple[bool, dict[str, Any]]:
        return self.ok, {"leader": True, "last_cycle_age_s": 3}


@pytest.fixture
def served() -> Iterator[tuple[ManagerMetrics, Health, str]]:
    metrics, health = ManagerMetrics("c1"), Health()
    server = serve(metrics.registry, health)
    yield metrics, health, f"http://127.0.0.1:{server.port}"
    server.stop()


def test_metrics_endpoint_serves_prometheus_text(
    served: tuple[ManagerMetrics, Health, str],
) -> None:
    metrics, _, base = served
    metrics.follow_leadership(Leading(epoch=4))
    code, ctype, body = http_get(base + "/metrics")
    assert code == 200 and ctype.startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(body)}
    epoch = families["kmedic_fencing_epoch"].samples[0]
    assert epoch.labels == {"cluster": "c1"} and epoch.value == 4


def test_healthz_reports_200_then_503(served: tuple[ManagerMetrics, Health, str]) -> None:
    _, health, base = served
    code, ctype, body = http_get(base + "/healthz")
    assert code == 200 and ctype == "application/json"
    assert json.loads(body) == {"healthy": True, "leader": True, "last_cycle_age_s": 3}
    health.ok = False
    code, _, body = http_get(base + "/healthz")
    assert code == 503 and json.loads(body)["healthy"] is False
    assert http_get(base + "/nope")[0] == 404


def test_a_taken_port_is_named() -> None:
    first = serve(ManagerMetrics("c1").registry, Health())
    try:
        with pytest.raises(KmedicError, match=f"cannot serve HTTP on 127.0.0.1:{first.port}"):
            serve(ManagerMetrics("c1").registry, Health(), port=first.port)
    finally:
        first.stop()
