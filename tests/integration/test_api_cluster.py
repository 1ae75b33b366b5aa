"""The manager's HTTP API on the real cluster, as a client calls it: two managers (a leader and
a standby) serving it over TLS with basic authentication, a reader and a writer. Reads say the
same from either manager; the reader is refused every write; the writer's requests, mode,
switches and placement land where the CLI stores them, whichever manager answered, each write
audited by that manager with the caller's name; the leader hears the switches; the audit log
pages and follows."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import requests
import yaml
from helpers import kmedic_process, read_audit, wait_for
from openapi_spec_validator import validate

from composition.pipeline import Pipeline
from kmedic.localcluster import LocalCluster, process
from kmedic.localcluster.tls import LocalCa

pytestmark = pytest.mark.integration

WRITER, READER = ("ops", "ops-pass"), ("viewer", "viewer-pass")


@dataclass
class Api:
    """The two managers' API addresses, the CA to trust, and the cluster's name."""

    leader: str
    standby: str
    ca: Path
    name: str
    zk: list[str]
    bootstrap: str

    def call(
        self, method: str, base: str, path: str, auth: tuple[str, str] | None = WRITER, **kw: Any
    ) -> requests.Response:
        return requests.request(
            method, base + path, auth=auth, verify=str(self.ca), timeout=30, **kw
        )


def _hashed(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()


@pytest.fixture(scope="module")
def api(local_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    workdir = tmp_path_factory.mktemp("api")
    ca = LocalCa.create(workdir / "pki")
    cert = ca.issue(workdir / "pki", "127.0.0.1", server=True)
    web = workdir / "web.yml"
    web.write_text(
        yaml.safe_dump(
            {
                "tls_server_config": {"cert_file": str(cert.cert), "key_file": str(cert.key)},
                "basic_auth_users": {WRITER[0]: _hashed(WRITER[1]), READER[0]: _hashed(READER[1])},
                "api_writers": [WRITER[0]],
            }
        )
    )
    name = f"api-{uuid.uuid4().hex[:6]}"
    pipeline = Pipeline(local_cluster, workdir, cluster_name=name)
    ports = process.free_ports(2)
    zk = ["--zk", local_cluster.zk_connect, "--cluster", name]
    try:
        for role, port in zip(("m1", "m2"), ports, strict=True):
            pipeline.start_manager(
                role,
                instance_id=role,
                mode="observe",  # the writes below must not move anything on the shared cluster
                readiness={"enabled": False},
                http={"port": port, "web_config_file": str(web)},
                audit={"spool_dir": str(workdir / f"spool-{role}")},
            )
        bases = {
            role: f"https://127.0.0.1:{port}"
            for role, port in zip(("m1", "m2"), ports, strict=True)
        }
        bootstrap = local_cluster.bootstrap_servers
        probe = Api(bases["m1"], bases["m2"], ca.cert, name, zk, bootstrap)

        def led() -> str | None:
            """The leader both managers name, once both serve: the standby's server may
            still be starting when the leader's answers (CI: refused on the standby's port)."""
            named = set()
            for base in bases.values():
                try:
                    answer = probe.call("GET", base, "/api/v1/status", auth=READER)
                except requests.ConnectionError:
                    return None
                leader = answer.json()["leader"] if answer.status_code == 200 else None
                named.add(leader["instance"] if leader else None)
            return named.pop() if len(named) == 1 else None

        leader = wait_for(
            lambda: pipeline.check_running() or led(), timeout=60, what="a leader both name"
        )
        standby = "m2" if leader == "m1" else "m1"
        yield Api(bases[leader], bases[standby], ca.cert, name, zk, bootstrap)
    finally:
        pipeline.stop()


def test_reads_say_the_same_from_either_manager_and_need_a_user(api: Api) -> None:
    views = [
        api.call("GET", base, "/api/v1/status", auth=READER) for base in (api.leader, api.standby)
    ]
    assert [v.status_code for v in views] == [200, 200]
    docs = [v.json() for v in views]
    assert docs[0]["leader"] == docs[1]["leader"] and docs[0]["epoch"] == docs[1]["epoch"]
    assert [d["answered_by"]["leads"] for d in docs] == [True, False]

    refused = api.call("GET", api.standby, "/api/v1/status", auth=(READER[0], "wrong"))
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "application/problem+json"
    assert api.call("GET", api.leader, "/metrics", auth=None).status_code == 401
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(api.leader + "/healthz", auth=READER, verify=True, timeout=10)

    document = api.call("GET", api.standby, "/api/v1/openapi.json", auth=READER)
    validate(document.json())
    assert "/api/v1/requests" in document.json()["paths"]
    assert "kmedic_cluster_observable" in api.call("GET", api.leader, "/metrics", auth=READER).text
    decided = api.call("GET", api.standby, "/api/v1/decision", auth=READER).json()
    assert decided["leads"] is False and decided["decision"] is None

    def unsafe() -> dict[str, Any] | None:
        answer = api.call("GET", api.leader, "/api/v1/topics/unsafe", auth=READER)
        return answer.json() if answer.status_code == 200 else None

    found = wait_for(unsafe, timeout=60, what="the leader's first snapshot")
    assert found["leads"] is True and isinstance(found["topics"], list)
    assert found["min_replication_factor"] >= 1


def test_the_reader_is_refused_every_write_and_nothing_is_stored(api: Api) -> None:
    answer = api.call(
        "POST", api.leader, "/api/v1/requests", auth=READER, json={"kind": "demote", "brokers": [1]}
    )
    assert answer.status_code == 403, answer.text
    assert "may only read" in answer.json()["detail"]
    listed = api.call("GET", api.standby, "/api/v1/requests", auth=READER).json()
    assert listed == []


def test_writes_from_either_manager_land_where_the_cli_reads_them_audited_by_name(api: Api) -> None:
    since_ms = int(time.time() * 1000)
    # A drain of a broker holding replicas: observe mode keeps it pending (a demote of a
    # broker that happens to lead nothing would be done at once).
    made = api.call("POST", api.standby, "/api/v1/requests", json={"kind": "drain", "brokers": [1]})
    assert made.status_code == 201, made.text
    request_id = made.json()["id"]
    listed = kmedic_process("requests", "list", "--json", *api.zk)
    assert listed.returncode == 0, listed.stderr
    stored = {json.loads(line)["id"]: json.loads(line) for line in listed.stdout.splitlines()}
    assert stored[request_id]["by"] == "ops via the API from 127.0.0.1"
    cancelled = api.call("DELETE", api.leader, f"/api/v1/requests/{request_id}")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled", cancelled.text
    again = api.call("DELETE", api.leader, f"/api/v1/requests/{request_id}")
    assert again.status_code == 409 and "only a pending or running" in again.json()["detail"]
    missing = api.call("DELETE", api.leader, "/api/v1/requests/req-9999999999")
    assert missing.status_code == 404

    mode = api.call("PUT", api.standby, "/api/v1/mode", json={"mode": "observe", "why": "api"})
    assert mode.status_code == 200
    shown = kmedic_process("mode", "--json", *api.zk)
    assert json.loads(shown.stdout)["by"] == "ops via the API from 127.0.0.1", shown.stderr

    def held_by_leader() -> tuple[str, str]:
        said = api.call("GET", api.leader, "/api/v1/status", auth=READER).json()["answered_by"]
        return said["mode"], said["mode_source"]

    # The effective mode and its source (issue 72.5: the stored mode alone said null while
    # the leader ran by its config).
    wait_for(lambda: held_by_leader() == ("observe", "run_time"), timeout=30, what="run_time")
    # Cleared: each config decides again (issue 71.2), by the API or by `kmedic mode --clear`.
    cleared = api.call("DELETE", api.leader, "/api/v1/mode")
    assert cleared.status_code == 200, cleared.text
    assert cleared.json()["cleared"]["mode"] == "observe"
    assert json.loads(kmedic_process("mode", "--json", *api.zk).stdout) is None
    wait_for(lambda: held_by_leader() == ("observe", "config"), timeout=30, what="config mode")
    again = kmedic_process("mode", "observe", *api.zk)  # act could move things here
    assert again.returncode == 0, again.stderr
    by_cli = kmedic_process("mode", "--clear", *api.zk)
    assert by_cli.returncode == 0, by_cli.stderr
    assert by_cli.stdout.startswith("mode: cleared (observe, set by "), by_cli.stdout
    both = kmedic_process("mode", "act", "--clear", *api.zk)
    assert both.returncode == 2 and "not both" in both.stderr, both.stderr

    switched = api.call(
        "PUT", api.standby, "/api/v1/switches", json={"goals": {"balance": False}, "why": "test"}
    )
    assert switched.status_code == 200 and switched.json()["goals"] == {"balance": False}
    unknown = api.call("PUT", api.standby, "/api/v1/switches", json={"goals": {"heal": False}})
    assert unknown.status_code == 422 and "not a goal: heal" in unknown.json()["detail"]
    status = api.call("GET", api.leader, "/api/v1/status", auth=READER).json()
    assert status["switches"]["goals"] == {"balance": False}

    domains = f"/api/v1/clusters/{api.name}/failureDomains"
    created = api.call("POST", api.standby, f"{domains}/d-api", json={"brokers": [1, 2]})
    assert created.status_code == 201, created.text
    updated = api.call("POST", api.leader, f"{domains}/d-api", json={"brokers": [1, 2, 3]})
    assert updated.status_code == 200 and updated.json() == {"brokers": [1, 2, 3]}
    listed_domains = kmedic_process("domains", "list", "--json", *api.zk)
    assert json.loads(listed_domains.stdout) == [{"name": "d-api", "brokers": [1, 2, 3]}]
    clash = api.call("POST", api.leader, f"{domains}/d-two", json={"brokers": [3]})
    assert clash.status_code == 409, clash.text  # broker 3 is in d-api already
    kept = api.call("PUT", api.leader, f"{domains}/d-api/maintenance", json={"reason": "disks"})
    assert kept.status_code == 200 and kept.json()["reason"] == "disks"
    held = api.call("DELETE", api.leader, f"{domains}/d-api")
    assert held.status_code == 409 and "in maintenance" in held.json()["detail"]
    assert api.call("DELETE", api.leader, f"{domains}/d-api/maintenance").status_code == 204
    assert api.call("DELETE", api.standby, f"{domains}/d-api").status_code == 204

    def operator_records() -> list[Any]:
        return [
            r
            for r in read_audit(api.bootstrap, "kmedic.actions")
            if r.cluster == api.name and r.kind == "operator" and r.time_ms >= since_ms
        ]

    records = wait_for(lambda: len(operator_records()) >= 9 and operator_records(), timeout=30)
    assert all(r.details["user"] == "ops" for r in records)
    assert {r.instance for r in records} == {"m1", "m2"}  # each by the manager that answered
    assert any(f"stored request {request_id}" in r.summary for r in records)

    def leader_heard() -> bool:
        return any(
            r.summary.startswith("goal switches: balance off, set by ops via the API")
            for r in read_audit(api.bootstrap, "kmedic.actions")
            if r.cluster == api.name and r.kind == "decision"
        )

    wait_for(leader_heard, timeout=60, what="the leader's record of the switch")


def test_the_audit_log_pages_and_follows(api: Api) -> None:
    first = api.call(
        "GET", api.standby, "/api/v1/audit", auth=READER, params={"kind": "operator", "limit": 1}
    ).json()
    assert len(first["records"]) == 1 and first["next_cursor"], first
    second = api.call(
        "GET",
        api.standby,
        "/api/v1/audit",
        auth=READER,
        params={"kind": "operator", "limit": 1, "cursor": first["next_cursor"]},
    ).json()
    assert second["records"][0]["id"] != first["records"][0]["id"]
    assert second["records"][0]["time_ms"] >= first["records"][0]["time_ms"]

    lines: list[dict[str, Any]] = []
    opened = threading.Event()

    def follow() -> None:
        with requests.get(
            api.leader + "/api/v1/audit/follow",
            params={"kind": "operator", "since": "10m"},
            auth=READER,
            verify=str(api.ca),
            stream=True,
            timeout=60,
        ) as answer:
            opened.set()
            for line in answer.iter_lines():
                record = json.loads(line) if line else {}
                if (record.get("details", {}).get("mode") or {}).get("why") == "follow":
                    lines.append(record)
                    return  # closing the stream ends the manager's reader

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    assert opened.wait(30)
    mode = api.call("PUT", api.standby, "/api/v1/mode", json={"mode": "observe", "why": "follow"})
    assert mode.status_code == 200
    reader.join(60)
    assert lines and lines[0]["kind"] == "operator", lines
    assert lines[0]["summary"] == "ops via the API from 127.0.0.1: mode set to observe"
