"""Kafka's request log as the soak reads it (composition.soak.request_log): the brokers'
witness of which manager sent which write, and when it arrived."""

from __future__ import annotations

import json
from pathlib import Path

from composition.soak.request_log import instance_of, parse_line, read_requests
from kmedic.localcluster.configs import KMEDIC_WRITERS, log4j2_properties


def line(completed_ms: int, api: str, client_id: str, total_ms: float) -> str:
    header = {
        "requestApiKey": 0,
        "requestApiVersion": 11,
        "correlationId": 7,
        "clientId": client_id,
        "requestApiKeyName": api,
    }
    desc = {
        "isForwarded": False,
        "requestHeader": header,
        "request": {"acks": -1},
        "response": {"responses": []},
        "connection": "127.0.1.1:9092-127.0.0.1:40112-4",
        "totalTimeMs": total_ms,
        "requestQueueTimeMs": 0.1,
    }
    return f"{completed_ms} Completed request:{json.dumps(desc, separators=(',', ':'))}"


def test_a_managers_write_is_read_with_the_time_it_arrived() -> None:
    seen = parse_line("broker-1", line(1_700_000_002_500, "PRODUCE", "kmedic-audit-m1", 2_400.4))
    assert seen is not None
    assert (seen.instance, seen.api, seen.writes) == ("m1", "PRODUCE", True)
    assert (seen.received_ms, seen.completed_ms) == (1_700_000_000_100, 1_700_000_002_500)
    assert seen.connection == "127.0.1.1:9092-127.0.0.1:40112-4"
    read = parse_line("broker-2", line(5, "DESCRIBE_CONFIGS", "kmedic-executor-vm-7", 1.0))
    assert read is not None and read.instance == "vm-7" and not read.writes


def test_lines_that_are_not_a_managers_completed_request_are_skipped() -> None:
    assert parse_line("b", line(5, "PRODUCE", "verifiable-producer", 1.0)) is None
    assert parse_line("b", line(5, "PRODUCE", "kmedic-audit-", 1.0)) is None
    assert parse_line("b", "") is None
    assert parse_line("b", "12 Completed request:{not json") is None
    assert parse_line("b", "[2026-12-06 21:00:00,000] Completed request:{}") is None
    assert instance_of("kmedic-manager") is None


def test_every_nodes_log_is_read_in_order_of_arrival(tmp_path: Path) -> None:
    for node, lines in {
        "broker-1": [line(3_000, "PRODUCE", "kmedic-audit-m2", 10.0)],
        "controller-9": [line(2_000, "ELECT_LEADERS", "kmedic-executor-m1", 5.0), "torn"],
        "broker-2": [],
    }.items():
        (tmp_path / node).mkdir()
        (tmp_path / node / "requests.log").write_text("\n".join(lines))
    (tmp_path / "broker-3").mkdir()  # no log: nothing of it
    found = read_requests(sorted(tmp_path.iterdir()))
    assert [(s.node, s.api, s.received_ms) for s in found] == [
        ("controller-9", "ELECT_LEADERS", 1_995),
        ("broker-1", "PRODUCE", 2_990),
    ]


def test_the_nodes_log_kmedics_writers_requests_alone() -> None:
    props = log4j2_properties("/n/server.log", "/n/requests.log")
    assert "logger.request.level = DEBUG" in props
    assert "appender.requests.fileName = /n/requests.log" in props
    assert f"appender.requests.filter.writers.regex = {KMEDIC_WRITERS}" in props
    assert "logger.request.level = WARN" in log4j2_properties("/n/server.log")
