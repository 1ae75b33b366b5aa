"""`kmedic healthcheck`, the image's HEALTHCHECK: the role and its port from the role's command
line and config, and the answer of its real endpoint read as healthy or not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from api_support import serve as serve_pages

from agent.metrics import AgentMetrics
from composition.healthcheck import Target, probe, role_of, target_of, undelivered
from kmedic.errors import KmedicError
from kmedic.exits import Exit
from kmedic.metrics_http import serve_metrics
from manager.web.metrics import ManagerMetrics

CONFIGS = Path(__file__).parents[2] / "configs"


def test_the_role_and_config_come_from_the_command_line() -> None:
    argv = ["/opt/kmedic/.venv/bin/python", "/opt/kmedic/.venv/bin/kmedic", "--log-json"]
    assert role_of([*argv, "manager", "--config", "/etc/m.yaml"]) == (
        "manager",
        Path("/etc/m.yaml"),
    )
    assert role_of([*argv, "agent", "--config=/etc/a.yaml"]) == ("agent", Path("/etc/a.yaml"))
    assert role_of([*argv, "stream"]) == ("stream", None)
    with pytest.raises(KmedicError, match=r"not a kmedic role process: .* plan --snapshot s"):
        role_of([*argv, "plan", "--snapshot", "s"])


def test_each_role_is_asked_where_its_config_says_it_listens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert target_of("agent", CONFIGS / "agent.example.yaml") == Target(
        "agent", "http://127.0.0.1:9464/metrics", deliver_within_s=3 * 60.0
    )
    assert target_of("stream", CONFIGS / "stream.example.yaml") == Target(
        "stream", "http://127.0.0.1:9465/metrics"
    )
    monkeypatch.setenv("KMEDIC_MANAGER__HTTP__PORT", "19309")  # as the role itself reads it
    assert target_of("manager", CONFIGS / "manager.example.yaml") == Target(
        "manager", "http://127.0.0.1:19309/healthz"
    )
    monkeypatch.setenv("KMEDIC_AGENT__METRICS_PORT", "null")
    with pytest.raises(KmedicError, match="metrics_port is None: the role serves no endpoint"):
        target_of("agent", CONFIGS / "agent.example.yaml")


def serve(healthy: bool) -> Any:
    return serve_pages(
        ManagerMetrics("c1").registry, lambda: (healthy, {"zookeeper_connected": healthy})
    )


def test_a_healthy_manager_passes_and_an_unhealthy_one_fails_saying_why() -> None:
    for healthy in (True, False):
        server = serve(healthy)
        try:
            code, line = probe(Target("manager", f"http://127.0.0.1:{server.port}/healthz"), 5)
        finally:
            server.stop()
        assert code == (Exit.OK if healthy else Exit.NOT_DONE), line
        if not healthy:
            assert "answered 503" in line and "zookeeper_connected" in line


def test_a_role_that_does_not_answer_is_unhealthy() -> None:
    server = serve(True)
    port = server.port
    server.stop()
    code, line = probe(Target("agent", f"http://127.0.0.1:{port}/metrics"), 2)
    assert code == Exit.UNREACHABLE and line.startswith(
        f"agent unhealthy: http://127.0.0.1:{port}/metrics unreachable"
    )


def test_the_command_reads_the_role_process_and_asks_its_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import subprocess
    import sys

    from composition.cli import main

    server = serve(True)
    config = tmp_path / "agent.yaml"
    config.write_text(
        (CONFIGS / "agent.example.yaml")
        .read_text()
        .replace("metrics_port: 9464", f"metrics_port: {server.port}")
    )
    # A process whose command line reads like the agent's (`kmedic agent --config FILE`), its
    # config named relative to its own working directory, not the check's (found by hand: the
    # check read it against its own and failed to find it).
    role = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "agent", "--config", config.name],
        cwd=tmp_path,
    )
    try:
        assert main(["healthcheck", "--pid", str(role.pid)]) == 0
        assert capsys.readouterr().out.startswith(
            f"agent healthy (http://127.0.0.1:{server.port}/metrics answered 200)"
        )
        server.stop()
        assert main(["healthcheck", "--pid", str(role.pid)]) == Exit.UNREACHABLE
        assert "agent unhealthy" in capsys.readouterr().out
    finally:
        role.kill()
        role.wait(timeout=10)
        server.stop()
    assert main(["healthcheck", "--pid", str(role.pid)]) == 1
    assert "cannot read the command line of process" in capsys.readouterr().err


def test_an_agent_that_answers_but_delivers_nothing_is_unhealthy() -> None:
    """Found by hand: an agent with 0 samples and Kafka down was called healthy, for serving
    /metrics at all. It is healthy while Kafka acknowledges its records (within three sampling
    intervals), and in its first three intervals, before any is due."""
    metrics = AgentMetrics(broker_id=1)
    server = serve_metrics(metrics.registry, "127.0.0.1", 0)
    target = Target("agent", f"http://127.0.0.1:{server.port}/metrics", deliver_within_s=30.0)
    try:
        assert probe(target, 5, running_s=10)[0] == Exit.OK  # nothing due yet
        code, line = probe(target, 5, running_s=100)
        assert (code, line) == (
            Exit.NOT_DONE,
            "agent unhealthy: no record acknowledged by Kafka in the 100 s it has run",
        )
        metrics.last_delivery.set(1000.0)
        assert probe(target, 5, running_s=100, now=1020.0)[0] == Exit.OK
        code, line = probe(target, 5, running_s=100, now=1100.0)
        assert code == Exit.NOT_DONE and "for 100 s (bound 30 s)" in line
    finally:
        server.stop()


def test_only_an_agent_is_held_to_its_deliveries() -> None:
    stream = Target("stream", "u")
    assert undelivered(stream, "", running_s=10**6, now=10**9) is None


# The four web configs a role may run under, and the check under each (issue 71.1): healthy
# means the role's own answer, read with the operator's credentials; a 401 is never healthy.
WEB_CONFIGS = ("plain", "tls", "basic_auth", "tls_and_basic_auth")
PASSWORD = "check-pass"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from kmedic.localcluster.tls import LocalCa

    d = tmp_path_factory.mktemp("pki")
    ca = LocalCa.create(d)
    server = ca.issue(d, "kmedic-manager", server=True)
    return {"cert": server.cert, "key": server.key}


def web_doc(kind: str, pki: dict[str, Path]) -> dict[str, Any]:
    import bcrypt

    doc: dict[str, Any] = {}
    if "tls" in kind:
        doc["tls_server_config"] = {"cert_file": str(pki["cert"]), "key_file": str(pki["key"])}
    if "basic_auth" in kind:
        hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
        doc["basic_auth_users"] = {"health": hashed}
    return doc


@pytest.mark.parametrize("kind", WEB_CONFIGS)
def test_the_check_tells_a_healthy_manager_from_a_sick_one_under_every_web_config(
    kind: str, pki: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The check as the image runs it (a process's command line, its config and its web
    config read from there) against the manager's real HTTP server under each web config.
    Without the fix a manager answering 503 behind basic auth exited 0 ("wants a password"),
    and basic auth without TLS was asked over https (exit 5)."""
    import subprocess
    import sys

    import yaml

    from composition.cli import main
    from kmedic.web_config import load_web_config

    web_path = tmp_path / "web.yml"
    web_path.write_text(yaml.safe_dump(web_doc(kind, pki)))
    web = load_web_config(web_path)
    creds = tmp_path / "health.yml"
    creds.write_text(yaml.safe_dump({"username": "health", "password": PASSWORD}))
    wants_password = "basic_auth" in kind
    scheme = "https" if "tls" in kind else "http"
    for healthy in (True, False):
        server = serve_pages(
            ManagerMetrics("c1").registry,
            lambda h=healthy: (h, {"zookeeper_connected": h}),  # type: ignore[misc]
            web=web,
        )
        config = tmp_path / "manager.yaml"
        doc = yaml.safe_load((CONFIGS / "manager.example.yaml").read_text())
        # The web config named relative to the role's working directory, as a unit may.
        doc["http"] = {"host": "127.0.0.1", "port": server.port, "web_config_file": "web.yml"}
        config.write_text(yaml.safe_dump(doc))
        role = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import time; time.sleep(60)",
                "manager",
                "--config",
                "manager.yaml",
            ],
            cwd=tmp_path,
        )
        try:
            args = ["healthcheck", "--pid", str(role.pid)]
            code = main([*args, "--credentials", str(creds)])
            out = capsys.readouterr().out
            url = f"{scheme}://127.0.0.1:{server.port}/healthz"
            if healthy:
                assert (code, out) == (Exit.OK, f"manager healthy ({url} answered 200)\n")
            else:
                assert code == Exit.NOT_DONE and f"manager unhealthy: {url} answered 503" in out
            # Without credentials a role behind basic auth is never called healthy.
            code = main(args)
            out = capsys.readouterr().out
            if wants_password:
                assert code == Exit.NOT_DONE, out
                assert "health unknown" in out and "--credentials" in out
            else:
                assert code == (Exit.OK if healthy else Exit.NOT_DONE), out
        finally:
            role.kill()
            role.wait(timeout=10)
            server.stop()


def test_wrong_credentials_are_named_and_never_healthy(
    pki: dict[str, Path], tmp_path: Path
) -> None:
    from composition.healthcheck import Credentials
    from kmedic.web_config import WebConfig

    web = WebConfig.model_validate(web_doc("basic_auth", pki))
    server = serve_pages(ManagerMetrics("c1").registry, lambda: (True, {}), web=web)
    try:
        target = Target("manager", f"http://127.0.0.1:{server.port}/healthz", wants_password=True)
        wrong = Credentials(username="health", password="nope")
        code, line = probe(target, 5, credentials=wrong)
        assert code == Exit.NOT_DONE
        assert line.endswith("refused user 'health' (401): a wrong password?")
        code, line = probe(target, 5)
        assert code == Exit.NOT_DONE and "wants a password" in line
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("username: a\n", "username and password go together"),
        ("username: a\npassword: b\ncert_file: c\n", "cert_file and key_file go together"),
        ("user: a\npassword: b\n", "user"),
        ("username: a\nusername: b\npassword: c\n", "given twice"),
        ("- a\n", "must be a mapping"),
        ("username: [\n", "not valid YAML"),
    ],
)
def test_a_bad_credentials_file_is_named(text: str, error: str, tmp_path: Path) -> None:
    from composition.healthcheck import load_credentials
    from kmedic.errors import ConfigError

    path = tmp_path / "health.yml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=error) as caught:
        load_credentials(path)
    assert str(path) in str(caught.value)
    with pytest.raises(ConfigError, match="cannot read the credentials"):
        load_credentials(tmp_path / "absent.yml")
