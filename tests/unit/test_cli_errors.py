"""The CLI turns bad input into one clear line, never a traceback."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import kmedic_process

from composition.cli import main
from kmedic.errors import KmedicError


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["no-such-command"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


def test_an_unknown_log_level_is_a_usage_error_naming_the_levels(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--log-level", "LOUD", "plan", "--snapshot", "s.json"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert "argument --log-level: invalid choice: 'LOUD'" in err
    assert "'DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'" in err
    assert "Traceback" not in err


def test_a_log_level_is_taken_in_any_case(tmp_path: Path) -> None:
    snapshot = tmp_path / "missing.json"  # the level is read before the snapshot is
    assert main(["--log-level", "info", "plan", "--snapshot", str(snapshot)]) != 0


def test_status_of_a_missing_cluster_names_the_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["cluster", "--dir", str(tmp_path / "none"), "status"])
    err = capsys.readouterr().err
    assert code == 1
    assert "no local cluster in" in err
    assert "Traceback" not in err


def test_corrupt_state_file_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "state.json").write_text("{not json")
    assert main(["cluster", "--dir", str(tmp_path), "down"]) == 1
    assert "not a valid cluster state file" in capsys.readouterr().err


def test_bad_broker_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cluster", "--dir", str(tmp_path), "up", "--broker-count", "0"]) == 1
    assert "--broker-count must be at least 1" in capsys.readouterr().err


def test_an_unexpected_failure_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import kmedic.cluster_cli

    def boom(_: Path) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(kmedic.cluster_cli.LocalCluster, "load", staticmethod(boom))
    assert main(["cluster", "--dir", str(tmp_path), "status"]) == 1
    err = capsys.readouterr().err
    assert "kmedic: error: unexpected RuntimeError: boom" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("error", [RuntimeError, KmedicError])
def test_a_known_secret_never_reaches_the_error_line(
    error: type[Exception],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kmedic.cluster_cli
    from kmedic import secrets

    secrets.register("s3cret-for-the-cli-test")

    def leak(_: Path) -> None:
        raise error("connecting with password s3cret-for-the-cli-test failed")

    monkeypatch.setattr(kmedic.cluster_cli.LocalCluster, "load", staticmethod(leak))
    assert main(["cluster", "--dir", str(tmp_path), "status"]) == 1
    err = capsys.readouterr().err
    assert "s3cret" not in err and "password *** failed" in err


UNREACHABLE_MANAGER = """cluster: t
bootstrap: 127.0.0.1:{kafka_port}
zookeeper: {{zk_connect: "127.0.0.1:{zk_port}", session_timeout_s: 4}}
"""


def test_a_tool_says_what_is_unreachable_in_one_line_without_library_noise(
    tmp_path: Path,
) -> None:
    """Client libraries retry and warn on their way to the failure (kazoo's `Connection
    dropped`, kmedic's own `kafka_not_reachable_at_start`); a tool's user reads one line. A
    role keeps those warnings (its log), and --log-level DEBUG shows them for a tool too.
    The commands run at once: each waits out its own connection timeout."""
    from kmedic.localcluster.process import free_ports

    kafka_port, zk_port = free_ports(2)
    config = tmp_path / "manager.yaml"
    config.write_text(UNREACHABLE_MANAGER.format(kafka_port=kafka_port, zk_port=zk_port))
    runs = {
        "tail": ["actions", "tail", "--config", str(config)],
        "domains": ["domains", "list", "--config", str(config)],
        "debug": ["--log-level", "DEBUG", "domains", "list", "--config", str(config)],
        "readiness": ["readiness", "--config", str(config)],
    }
    with ThreadPoolExecutor(len(runs)) as pool:
        done = dict(
            zip(
                runs,
                pool.map(lambda args: kmedic_process(*args, timeout=120), runs.values()),
                strict=True,
            )
        )
    assert {name: run.returncode for name, run in done.items()} == dict.fromkeys(runs, 5)
    assert done["tail"].stderr.splitlines() == [
        f"kmedic: error: reading kmedic.actions at 127.0.0.1:{kafka_port} failed: no broker "
        "answered in 5 s: Failed to get metadata: Local: Broker transport failure (_TRANSPORT)"
    ]
    assert done["domains"].stderr.splitlines() == [
        f"kmedic: error: cannot connect to ZooKeeper at 127.0.0.1:{zk_port} within 10s"
    ]
    assert "kazoo.client" in done["debug"].stderr, "DEBUG shows what the libraries said"
    # It needs both, and names both (it blamed ZooKeeper alone, after five lines of the
    # Kafka clients' errors).
    assert done["readiness"].stderr.splitlines() == [
        f"kmedic: error: cannot connect to ZooKeeper at 127.0.0.1:{zk_port} within 4s; nor did "
        f"Kafka at 127.0.0.1:{kafka_port} answer (Failed to get metadata: Local: Broker "
        "transport failure (_TRANSPORT))"
    ]


@pytest.mark.parametrize(
    ("out", "says"),
    [("missing/snap.json", "no directory"), (".", "it is a directory")],
)
def test_snapshot_names_an_unwritable_out_before_reading_the_cluster(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    out: str,
    says: str,
) -> None:
    # It used to read the whole cluster first and only then fail on the path.
    import manager.cli.daemon as daemon

    read: list[object] = []
    monkeypatch.setattr(daemon, "take_snapshot", lambda *a: read.append(a))
    config = tmp_path / "manager.yaml"
    config.write_text(UNREACHABLE_MANAGER.format(kafka_port=1, zk_port=2))
    code = main(["snapshot", "--config", str(config), "--out", str(tmp_path / out)])
    assert code == 1
    assert f"cannot write {tmp_path / out}: {says}" in capsys.readouterr().err
    assert read == [], "the cluster was read before --out was looked at"


def test_topics_check_gives_up_on_an_unreachable_cluster_as_actions_tail_does(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its first answer is awaited for REACH_MS (5 s), not its requests' 15 s: with nothing
    listening it took 15 s to say so, three times `actions tail`."""
    import manager.cli.topics as topics
    from kmedic.errors import Unreachable
    from kmedic.kafka_admin import REACH_MS

    asked: dict[str, object] = {}

    def connect(cluster: object, **kwargs: object) -> None:
        asked.update(kwargs)
        raise Unreachable(f"cannot reach the cluster at {cluster}")

    monkeypatch.setattr(topics, "connect_admin", connect)
    assert main(["topics", "check", "--bootstrap", "127.0.0.1:1"]) == 5
    assert asked["reach_ms"] == REACH_MS == 5_000
    assert "127.0.0.1:1" in capsys.readouterr().err


def test_a_request_not_checked_at_once_says_so_and_goes_to_the_leader(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 72.1: with a bootstrap that does not answer, the request is not refused (the
    leader checks it at its next cycle) and stderr says it was not checked; with none given,
    nothing is asked of Kafka at all."""
    import manager.cli.request_check as check
    from manager.analyzer.request_check import Asked

    monkeypatch.setattr(check, "REACH_MS", 300)
    asked = Asked("drain", (1,))
    assert check.check_at_once("127.0.0.1:1", asked) is False
    err = capsys.readouterr().err
    assert "not checked at once" in err and "127.0.0.1:1" in err
    assert "the leading manager checks it at its next cycle" in err
    assert check.check_at_once(None, asked) is False
    assert capsys.readouterr().err == ""


def test_topics_check_names_kmedics_own_topics_it_does_not_flag(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 72: kmedic's own audit topic at min.insync.replicas 1 (as kmedic creates it) is
    not called unsafe, and the text says which own topics were judged by their own setting;
    the same setting on an operator's topic is named."""
    import manager.cli.topics as topics
    from manager.analyzer.topic_safety import TopicFacts

    facts = [
        TopicFacts("kmedic.actions", 3, 1),
        TopicFacts("kmedic.brokerstats", 3, 2),
        TopicFacts("orders", 3, 1),
    ]
    monkeypatch.setattr(topics, "read_facts", lambda cluster: facts)
    assert main(["topics", "check", "--bootstrap", "127.0.0.1:1"]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("orders: min.insync.replicas 1 at RF 3"), out
    assert out[1].startswith(
        "kmedic's own, min.insync.replicas 1 as kmedic creates them: kmedic.actions "
    ), out
    assert len(out) == 2
