"""The manager's HTTP API without a daemon: who may read and write (401, 403), every error a
problem document, the OpenAPI document valid and complete, the audit paging's cursor, the
cluster in a placement path. (The API on a real cluster, over TLS: tests/integration/
test_api_cluster.py.)"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import bcrypt
import pytest
from api_support import view_of
from fastapi.testclient import TestClient
from openapi_spec_validator import validate

from kmedic.web_config import WebConfig
from manager.api.app import OPENAPI_PATH, build_app
from manager.api.problems import PROBLEM_JSON
from manager.web.metrics import ManagerMetrics

HASHED = bcrypt.hashpw(b"pw", bcrypt.gensalt(rounds=4)).decode()
SECURED = WebConfig(basic_auth_users={"ops": HASHED, "viewer": HASHED}, api_writers=("ops",))


@contextmanager
def no_zookeeper() -> Iterator[Any]:
    raise AssertionError("this route should have answered before ZooKeeper")
    yield  # pragma: no cover


def client(web: WebConfig = SECURED, **view: Any) -> TestClient:
    built = view_of(
        ManagerMetrics("c1").registry,
        lambda: (True, {"leader": True}),
        **{"status": lambda: {"cluster": "c1"}, "cluster": "c1", "zookeeper": no_zookeeper, **view},
    )
    return TestClient(build_app(built, web, threading.Event()))


def is_problem(response: Any, status: int, *words: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM_JSON
    body = response.json()
    assert body["status"] == status and body["title"] and body["instance"]
    for word in words:
        assert word in body["detail"], body


def test_without_a_user_every_route_is_401_with_a_challenge() -> None:
    api = client()
    for path in ("/metrics", "/healthz", "/status.json", "/api/v1/status", OPENAPI_PATH):
        answer = api.get(path)
        is_problem(answer, 401, "basic_auth_users")
        assert answer.headers["www-authenticate"].startswith("Basic")
    is_problem(api.get("/metrics", auth=("ops", "wrong")), 401)
    is_problem(api.get("/metrics", auth=("nobody", "pw")), 401)


def test_a_reader_reads_and_is_refused_every_write_before_anything_is_written() -> None:
    api = client()
    assert api.get("/healthz", auth=("viewer", "pw")).json()["healthy"] is True
    assert api.get("/metrics", auth=("viewer", "pw")).status_code == 200
    writes = [
        ("post", "/api/v1/requests", {"kind": "demote", "brokers": [1]}),
        ("delete", "/api/v1/requests/req-0000000001", None),
        ("put", "/api/v1/mode", {"mode": "observe"}),
        ("delete", "/api/v1/mode", None),
        ("put", "/api/v1/switches", {"goals": {"balance": False}}),
        ("post", "/api/v1/clusters/c1/failureDomains/d1", {"brokers": [1]}),
        ("delete", "/api/v1/clusters/c1/failureDomains/d1", None),
        ("put", "/api/v1/clusters/c1/failureDomains/d1/maintenance", {"reason": "r"}),
        ("delete", "/api/v1/clusters/c1/failureDomains/d1/maintenance", None),
    ]
    for method, path, body in writes:
        answer = api.request(method, path, json=body, auth=("viewer", "pw"))
        is_problem(answer, 403, "'viewer' may only read", "api_writers")


def test_without_basic_auth_reads_are_open_and_no_write_is_taken() -> None:
    api = client(WebConfig())
    assert api.get("/healthz").status_code == 200
    is_problem(api.put("/api/v1/mode", json={"mode": "act"}), 403, "anonymous caller")


def test_a_bad_body_names_its_field_and_an_unknown_route_lists_the_routes() -> None:
    api = client()
    answer = api.post(
        "/api/v1/requests", json={"kind": "evict", "brokers": [1]}, auth=("ops", "pw")
    )
    is_problem(answer, 422, "body.kind")
    answer = api.post(
        "/api/v1/requests", json={"kind": "drain", "brokers": [-1]}, auth=("ops", "pw")
    )
    is_problem(answer, 422, "body.brokers.0")
    answer = api.put("/api/v1/mode", json={"mode": "act", "who": "me"}, auth=("ops", "pw"))
    is_problem(answer, 422, "body.who")
    is_problem(api.get("/nope", auth=("ops", "pw")), 404, "/status", "/api/v1/openapi.json")


def test_a_placement_path_of_another_cluster_is_404_naming_both() -> None:
    @contextmanager
    def zookeeper() -> Iterator[Any]:
        yield object()  # never used: the cluster is checked first

    api = client(zookeeper=zookeeper)
    answer = api.get("/api/v1/clusters/other/failureDomains", auth=("viewer", "pw"))
    is_problem(answer, 404, "'c1'", "'other'")


def test_a_broken_status_page_is_a_500_problem() -> None:
    def broken() -> dict[str, Any]:
        raise RuntimeError("no snapshot")

    api = client(status=broken)
    is_problem(api.get("/status.json", auth=("viewer", "pw")), 500, "no snapshot")


def test_the_audit_page_refuses_a_cursor_it_did_not_give_and_a_bad_since() -> None:
    api = client()
    answer = api.get("/api/v1/audit", params={"cursor": "yesterday"}, auth=("viewer", "pw"))
    is_problem(answer, 422, "next_cursor")
    answer = api.get("/api/v1/audit", params={"since": "last week"}, auth=("viewer", "pw"))
    is_problem(answer, 422, "since 'last week'", "15m")
    answer = api.get("/api/v1/audit", params={"kind": "gossip"}, auth=("viewer", "pw"))
    is_problem(answer, 422, "query.kind")


def test_the_openapi_document_is_valid_and_names_every_route_and_the_auth() -> None:
    doc = client().get(OPENAPI_PATH, auth=("viewer", "pw")).json()
    validate(doc)
    paths = doc["paths"]
    for path, methods in {
        "/api/v1/status": {"get"},
        "/api/v1/decision": {"get"},
        "/api/v1/readiness": {"get"},
        "/api/v1/audit": {"get"},
        "/api/v1/audit/follow": {"get"},
        "/api/v1/requests": {"get", "post"},
        "/api/v1/cordons": {"get"},
        "/api/v1/requests/{request_id}": {"delete"},
        "/api/v1/topics/unsafe": {"get"},
        "/api/v1/placement": {"get"},
        "/api/v1/mode": {"get", "put", "delete"},
        "/api/v1/switches": {"get", "put"},
        "/api/v1/clusters/{cluster}/failureDomains": {"get"},
        "/api/v1/clusters/{cluster}/failureDomains/{name}": {"get", "post", "delete"},
        "/api/v1/clusters/{cluster}/brokerGroups/{name}": {"get", "post", "delete"},
        "/api/v1/clusters/{cluster}/isolationGroups/{name}": {"get", "post", "delete"},
        "/api/v1/clusters/{cluster}/antiAffinityGroups/{name}": {"get", "post", "delete"},
        "/api/v1/clusters/{cluster}/failureDomains/{domain}/maintenance": {"put", "delete"},
        "/api/v1/clusters/{cluster}/maintenance": {"get"},
        "/metrics": {"get"},
        "/healthz": {"get"},
        "/status": {"get"},
    }.items():
        assert methods <= set(paths[path]), (path, sorted(paths[path]))
    assert doc["components"]["securitySchemes"]["HTTPBasic"]["scheme"] == "basic"
    isolation = doc["paths"]["/api/v1/clusters/{cluster}/isolationGroups/{name}"]["post"]
    body = isolation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert body.endswith("/IsolationGroupBody")
    # Errors are documented as what they are: problem documents.
    for status in ("401", "403", "422"):
        assert set(isolation["responses"][status]["content"]) == {PROBLEM_JSON}


@pytest.mark.parametrize("writers", [("ops",), ()])
def test_api_writers_must_be_users(writers: tuple[str, ...]) -> None:
    WebConfig(basic_auth_users={"ops": HASHED}, api_writers=writers)
    with pytest.raises(ValueError, match=r"api_writers names users without .*: stranger"):
        WebConfig(basic_auth_users={"ops": HASHED}, api_writers=(*writers, "stranger"))


def test_an_unexpected_failure_is_a_problem_document_not_plain_text() -> None:
    """Issue 71.8: errors other than kmedic's own came back as plain-text 500s."""

    def broken() -> dict[str, Any]:
        raise RuntimeError("the readiness view broke")

    api = TestClient(
        build_app(
            view_of(
                ManagerMetrics("c1").registry,
                lambda: (True, {}),
                readiness=broken,
                cluster="c1",
            ),
            SECURED,
            threading.Event(),
        ),
        raise_server_exceptions=False,
    )
    answer = api.get("/api/v1/readiness", auth=("viewer", "pw"))
    is_problem(answer, 500, "unexpected RuntimeError: the readiness view broke", "manager's log")


def test_the_shipped_document_names_the_response_shapes() -> None:
    """Issue 71.8: the OpenAPI document described no response shapes."""
    doc = client().get(OPENAPI_PATH, auth=("viewer", "pw")).json()
    assert "429" in doc["paths"]["/api/v1/audit/follow"]["get"]["responses"]
    assert "500" in doc["paths"]["/api/v1/status"]["get"]["responses"]
    shapes = {
        ("/api/v1/status", "get"): "StatusAnswer",
        ("/api/v1/decision", "get"): "DecisionAnswer",
        ("/api/v1/readiness", "get"): "ReadinessAnswer",
        ("/api/v1/topics/unsafe", "get"): "UnsafeAnswer",
        ("/api/v1/cordons", "get"): "CordonsAnswer",
        ("/api/v1/audit", "get"): "AuditPage",
        ("/api/v1/placement", "get"): "PlacementConfig",
        ("/api/v1/requests", "post"): "RequestDocument",
        ("/api/v1/mode", "put"): "ModeRecord",
        ("/api/v1/mode", "delete"): "ModeCleared",
        ("/api/v1/switches", "put"): "SwitchRecord",
    }
    for (path, method), name in shapes.items():
        answered = doc["paths"][path][method]["responses"]
        ok = answered.get("200") or answered.get("201")
        assert name in str(ok["content"]["application/json"]["schema"]), (path, method, ok)
    status = doc["components"]["schemas"]["StatusAnswer"]["properties"]
    assert {"leader", "epoch", "mode", "plan", "requests", "answered_by"} <= set(status)


def test_docs_api_md_names_exactly_the_routes_served() -> None:
    """Issue 72.4: docs/api.md gave placement routes (`/admin/v2/...`) that answered 404.
    Every route the page names is in the OpenAPI document, and every route served is named."""
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "api.md"

    def norm(path: str) -> str:
        return re.sub(r"\{[^}]*\}", "{}", path)

    documented = set()
    for line in page.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        for part in line.split("|")[1].split(";"):  # `GET /a`; `GET`, `POST /a/{name}`
            paths = re.findall(r"(/api/v1/[^`?\s,]*)", part)
            for method in re.findall(r"\b(GET|POST|PUT|DELETE)\b", part):
                documented |= {(method, norm(p)) for p in paths}
    doc = client().get(OPENAPI_PATH, auth=("viewer", "pw")).json()
    served = {
        (method.upper(), norm(path))
        for path, operations in doc["paths"].items()
        if path.startswith("/api/v1/")
        for method in operations
    }
    assert documented - served == set(), "named in docs/api.md, not served"
    assert served - documented == set(), "served, not named in docs/api.md"


def test_a_request_that_can_never_be_met_is_refused_when_it_is_made() -> None:
    """Issue 72.1: a drain of every broker and an RF of 1,000,000 got 201 and sat in the
    queue; on the manager's last snapshot they are refused at once, 409 with why."""
    from planner_fixtures import broker, make, part

    snap = make([broker(b, "/r") for b in (1, 2, 3)], {"t": [part(0, [1, 2, 3])]})
    api = client(snapshot=lambda: snap)
    every = api.post(
        "/api/v1/requests", json={"kind": "drain", "brokers": [1, 2, 3]}, auth=("ops", "pw")
    )
    is_problem(every, 409, "refused: emptying brokers [1, 2, 3] leaves 0 brokers")
    huge = {"kind": "set_rf", "topic": "t", "replication_factor": 1_000_000}
    is_problem(api.post("/api/v1/requests", json=huge, auth=("ops", "pw")), 409, "cannot be placed")


def test_a_failure_domain_naming_a_broker_the_cluster_lacks_is_refused() -> None:
    """Issue 72.2: a failure domain naming a broker that does not exist was stored."""
    from planner_fixtures import broker, make, part

    snap = make([broker(b, "/r") for b in (1, 2, 3)], {"t": [part(0, [1, 2, 3])]})
    api = client(snapshot=lambda: snap)
    answer = api.post(
        "/api/v1/clusters/c1/failureDomains/d1", json={"brokers": [1, 9]}, auth=("ops", "pw")
    )
    is_problem(answer, 422, "not stored: the cluster has no broker [9] (it has [1, 2, 3])")


def test_the_cordons_route_answers_what_the_manager_knows() -> None:
    from dataclasses import replace as with_

    view = view_of(ManagerMetrics("c1").registry, lambda: (True, {}), cluster="c1")
    view = with_(view, cordons=lambda: [{"broker": 4, "by": "kmedic (req-0000000001)"}])
    answer = TestClient(build_app(view, SECURED, threading.Event())).get(
        "/api/v1/cordons", auth=("viewer", "pw")
    )
    assert answer.json()["cordons"] == [{"broker": 4, "by": "kmedic (req-0000000001)"}]
