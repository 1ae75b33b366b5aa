"""A real Prometheus scrapes kmedic's endpoints through TLS and basic authentication set by
a web-config file: the manager's server and the /metrics server of the agent and the Spark
job. A scrape with the wrong password, or without trusting kmedic's CA, is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
import yaml
from api_support import serve
from helpers import wait_for
from prometheus_client import CollectorRegistry, Gauge
from prometheus_support import PrometheusServer

from kmedic.http_server import HttpServer
from kmedic.localcluster.tls import LocalCa
from kmedic.metrics_http import serve_metrics
from kmedic.web_config import load_web_config
from manager.web.metrics import ManagerMetrics

pytestmark = pytest.mark.integration

PASSWORD = "scrape-pass"


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[tuple[list[str], Path, Path]]:
    """Two protected servers (a manager's, an agent-style /metrics), the CA to trust them and
    a password file for Prometheus."""
    ca = LocalCa.create(tmp_path / "pki")
    cert = ca.issue(tmp_path / "pki", "kmedic", server=True)
    web = tmp_path / "web.yml"
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    web.write_text(
        yaml.safe_dump(
            {
                "tls_server_config": {"cert_file": str(cert.cert), "key_file": str(cert.key)},
                "basic_auth_users": {"prometheus": hashed},
            }
        )
    )
    config = load_web_config(web)
    manager = serve(ManagerMetrics("secured").registry, lambda: (True, {}), web=config)
    registry = CollectorRegistry()
    Gauge("kmedic_agent_up", "an agent's gauge", registry=registry).set(1)
    agent: HttpServer = serve_metrics(registry, "127.0.0.1", 0, config)
    password_file = tmp_path / "password"
    password_file.write_text(PASSWORD)
    try:
        yield [f"127.0.0.1:{manager.port}", f"127.0.0.1:{agent.port}"], ca.cert, password_file
    finally:
        manager.stop()
        agent.stop()


def test_prometheus_scrapes_through_tls_and_basic_auth(
    secured: tuple[list[str], Path, Path], tmp_path: Path
) -> None:
    targets, ca, password_file = secured
    wrong = tmp_path / "wrong"
    wrong.write_text("not-it")

    def job(password: Path, trust: bool = True) -> dict[str, object]:
        tls = {"ca_file": str(ca)} if trust else {}
        return {
            "scheme": "https",
            "tls_config": tls,
            "basic_auth": {"username": "prometheus", "password_file": str(password)},
            "static_configs": [{"targets": targets}],
        }

    jobs = {
        "secured": job(password_file),
        "wrong-password": job(wrong),
        "untrusted": job(password_file, trust=False),
    }
    server = PrometheusServer(tmp_path / "prometheus", [], jobs=jobs).start()
    try:
        wait_for(
            lambda: len(server.query('up{job="secured"} == 1')) == 2,
            timeout=60,
            what="both protected servers scraped",
        )
        assert server.query('kmedic_agent_up{job="secured"} == 1')
        assert server.query('kmedic_dead_brokers{job="secured", cluster="secured"}')
        for refused in ("wrong-password", "untrusted"):
            query = f'up{{job="{refused}"}} == 0'
            wait_for(
                lambda q=query: len(server.query(q)) == 2,
                timeout=30,
                what=f"the {refused} scrapes to fail",
            )
        errors = {
            t["scrapePool"]: t["lastError"] for t in server._api("/api/v1/targets")["activeTargets"]
        }
        assert "401" in errors["wrong-password"]
        assert "certificate" in errors["untrusted"]
    finally:
        server.stop()
