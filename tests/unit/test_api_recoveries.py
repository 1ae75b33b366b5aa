"""The last resort over HTTP (manager/api/recoveries.py) without a cluster: the ways read from
the instance's snapshot, and every refusal answered before anything is audited or asked of
Kafka (the act itself on a real cluster: tests/integration/test_recover_cli.py)."""

from __future__ import annotations

import threading
from typing import Any

from api_support import view_of
from fastapi.testclient import TestClient
from test_api import SECURED, is_problem
from test_last_logs import _offline

from kmedic.web_config import WebConfig
from manager.api.app import build_app
from manager.web.metrics import ManagerMetrics


def client(snap: Any, web: WebConfig = SECURED) -> TestClient:
    built = view_of(
        ManagerMetrics("c1").registry, lambda: (True, {}), cluster="c1", snapshot=lambda: snap
    )
    return TestClient(build_app(built, web, threading.Event()))


def test_a_reader_gets_the_ways_out_of_each_offline_partition_ranked() -> None:
    answer = client(_offline()).get("/api/v1/recoveries", auth=("viewer", "pw"))
    assert answer.status_code == 200, answer.text
    assert [(w["way"], w["loses_at_most"]) for w in answer.json()["t:0"]][:2] == [
        ("wait:1", 0),
        ("elect:3", 200),
    ]


def test_every_refusal_is_answered_before_anything_is_audited_or_asked_of_kafka() -> None:
    api = client(_offline())  # its audit and its Kafka answer nothing: a call would fail
    ask = {"partition": "t:0", "way": "elect:3", "accept_loss": 199}
    is_problem(api.post("/api/v1/recoveries", json=ask, auth=("viewer", "pw")), 403)
    grown = api.post("/api/v1/recoveries", json=ask, auth=("ops", "pw"))
    is_problem(grown, 409, "now loses at most 200 records, more than the 199 accepted")
    recreate = {**ask, "way": "recreate", "accept_loss": "all"}
    answer = api.post("/api/v1/recoveries", json=recreate, auth=("ops", "pw"))
    is_problem(answer, 409, "kmedic does not recreate partitions")
    led = {**ask, "partition": "u:0", "accept_loss": "all"}
    is_problem(api.post("/api/v1/recoveries", json=led, auth=("ops", "pw")), 409, "not offline")
    bad = {**ask, "accept_loss": -1}
    is_problem(api.post("/api/v1/recoveries", json=bad, auth=("ops", "pw")), 422)
    nothing = client(None)
    is_problem(nothing.get("/api/v1/recoveries", auth=("ops", "pw")), 409, "ask the leader")
