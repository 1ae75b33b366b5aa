"""Every command's exit code means one thing (kmedic.exits; docs/operations.md, "Exit codes"):
a usage error is 2 on every command, a service that does not answer is 5 on every command
that needs one, a refusal 3, a partial heal 4, bad input 1 - never a number shared by two
meanings (a refusal and a usage error were both 2; "not done" and "could not connect" both 1).
"""

from __future__ import annotations

import argparse
import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_commands import COMMANDS, options, required_args
from planner_fixtures import broker, part, snapshot_dict

from composition.cli import main
from kmedic.exits import Exit
from manager.audit import kafka_reader
from manager.cli import topics as topics_cli
from manager.coordination import session

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "configs" / "examples"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_table_in_the_docs_is_the_one_the_code_uses() -> None:
    text = (ROOT / "docs" / "operations.md").read_text()
    table = text[text.index("### Exit codes") :]
    documented = {int(n) for n in re.findall(r"^\| +(\d+) \|", table, flags=re.MULTILINE)}
    assert documented == {int(e) for e in Exit}


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_takes_a_bad_flag_as_a_usage_error(
    path: tuple[str, ...], parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*path, *required_args(parser), "--no-such-flag"]
    if path == ("cluster", "exec"):  # everything after it is the command to run
        argv = ["cluster", "--no-such-flag", "exec", "true"]
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == Exit.USAGE
    assert "--no-such-flag" in capsys.readouterr().err


def test_a_value_out_of_range_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["soak", "--minutes", "0"],
        ["soak", "--ballast-mb", "-1"],
        ["soak", "--nic-mbps", "5"],
        ["cluster", "up", "--nic-mbps", "0"],
    ):
        with pytest.raises(SystemExit) as ended:
            main(argv)
        assert ended.value.code == Exit.USAGE, argv
        assert "must be" in capsys.readouterr().err


def test_plan_says_done_refused_partial_and_bad_input_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--snapshot", str(EXAMPLES / "healthy.json")]) == Exit.OK
    assert main(["plan", "--snapshot", str(EXAMPLES / "two-racks-lost.json")]) == Exit.NOT_DONE
    # Broker 6 dead; "stuck" may live only on brokers 1 and 6: "ok" is healed, "stuck" is not.
    brokers = [broker(b, f"/r{b % 3}", alive=b != 6) for b in range(1, 7)]
    alive = {1, 2, 3, 4, 5}
    partial = snapshot_dict(
        brokers,
        {"ok": [part(0, [6, 1], alive=alive)], "stuck": [part(0, [6, 1], alive=alive)]},
        broker_groups=[{"name": "tiny", "brokers": [1, 6]}],
        isolation_groups=[{"name": "i", "topics": ["stuck"], "primary": "tiny"}],
    )
    (tmp_path / "partial.json").write_text(json.dumps(partial))
    assert main(["plan", "--snapshot", str(tmp_path / "partial.json")]) == Exit.PARTIAL
    assert main(["plan", "--snapshot", str(tmp_path / "missing.json")]) == Exit.ERROR
    assert "missing.json" in capsys.readouterr().err


def test_every_command_that_needs_a_service_says_it_did_not_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each command with --zk or --bootstrap, pointed at a port nothing listens on, exits 5 and
    names the address (it exited 1, as for a bad config)."""
    monkeypatch.setattr(session, "CONNECT_TIMEOUT_S", 0.1)
    monkeypatch.setattr(topics_cli, "REACH_MS", 500)  # the bounds are their own tests'
    monkeypatch.setattr(kafka_reader, "REACH_S", 0.5)
    address = f"127.0.0.1:{closed_port()}"
    password = tmp_path / "password"
    password.write_text("secret\n")
    identity = ["--zk-username", "kmedic", "--zk-password-file", str(password)]
    checked = []
    for path, parser in COMMANDS:
        flags = options(parser)
        if "--zk" in flags:
            service = ["--zk", address, "--cluster", "c"]
        elif "--bootstrap" in flags:
            service = ["--bootstrap", address]
        else:
            continue
        if path[0] == "zk-acls":  # it acts as kmedic's own ZooKeeper identity
            service += identity
        json_flag = ["--json"] if "--json" in flags else []
        code = main([*path, *required_args(parser), *service, *json_flag])
        out, err = capsys.readouterr()
        assert (code, address in err) == (Exit.UNREACHABLE, True), (path, err)
        if json_flag:  # the error as JSON too, where a script reads the answer
            said = json.loads(out)
            assert (said["exit_code"], said["exit"]) == (5, "unreachable"), (path, out)
            assert address in said["error"]
        else:
            assert out == "", (path, out)
        checked.append(path)
    assert len(checked) >= 30, checked  # the placement admin, requests, status, tail, ...


def test_every_command_without_its_zookeeper_or_cluster_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 72.3: a missing --zk or --cluster (and a bad --since) exited 1, as a bad config
    does; the command line is wrong: 2, on every command that takes them."""
    for name in ("KMEDIC_ZK_CONNECT", "KMEDIC_CLUSTER"):
        monkeypatch.delenv(name, raising=False)
    checked = []
    for path, parser in COMMANDS:
        if "--zk" not in options(parser):
            continue
        for missing in (["--cluster", "c"], ["--zk", "127.0.0.1:1"]):
            code = main([*path, *required_args(parser), *missing])
            err = capsys.readouterr().err
            assert code == Exit.USAGE, (path, missing, err)
            assert "no ZooKeeper given" in err or "no cluster given" in err, (path, err)
        checked.append(path)
    assert len(checked) >= 20, checked
    code = main(["actions", "tail", "--bootstrap", "127.0.0.1:1", "--since", "yesterday"])
    assert code == Exit.USAGE and "--since 'yesterday'" in capsys.readouterr().err


def test_every_request_command_refuses_at_once_with_3_and_stores_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 72.1/72.3, over every command that stores an operator request (found by what the
    parser hands it, so a new one is held to it): one that could never be met on the cluster
    named by --bootstrap exits 3 ("asked, and the answer is no") with the reason, and nothing
    is stored. The cluster: brokers 1-3, topic t at RF 3."""
    from contextlib import contextmanager

    from manager.analyzer.request_check import ClusterFacts
    from manager.cli import request_check, requests

    @contextmanager
    def no_zookeeper(*args: object, **kwargs: object) -> Iterator[object]:
        yield object()

    def stored(*args: object, **kwargs: object) -> None:
        raise AssertionError("a refused request was stored")

    monkeypatch.setattr(requests, "zk_session", no_zookeeper)
    monkeypatch.setattr(requests, "require_cluster", lambda *args: None)
    monkeypatch.setattr(requests, "submit", stored)
    facts = ClusterFacts(frozenset({1, 2, 3}), {"t": 3})
    monkeypatch.setattr(request_check, "read_facts", lambda cluster, later, policy: facts)
    hopeless = {  # the command, and what makes it hopeless here
        ("drain",): (["1"], "leaves 2 brokers, fewer than the replication factor 3 of t"),
        ("fill",): (["9"], "the cluster has no broker [9] (it has [1, 2, 3])"),
        ("demote",): (["9"], "the cluster has no broker [9]"),
        ("decommission",): (["1", "2"], "leaves 1 brokers"),
        ("topics", "set-rf"): (["t", "--rf", "2"], "kmedic never lowers a replication factor"),
    }
    where = ["--zk", "127.0.0.1:1", "--cluster", "c", "--bootstrap", "127.0.0.1:9"]
    requesting = [
        path for path, parser in COMMANDS if parser.get_default("func") is requests.submit_request
    ]
    assert sorted(requesting) == sorted(hopeless)
    for path in requesting:
        argv, why = hopeless[path]
        code = main([*path, *argv, *where])
        err = capsys.readouterr().err
        assert code == Exit.NOT_DONE and "refused, nothing stored: " in err and why in err, (
            path,
            err,
        )


def test_a_request_with_a_manager_config_reads_the_file_once_and_checks_its_kafka(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kmedic drain --config` loaded the manager's YAML twice (once for ZooKeeper, once for
    the check against Kafka); once now, and the check asks the config's Kafka cluster."""
    from contextlib import contextmanager

    import manager.config as manager_config
    from manager.analyzer.request_check import ClusterFacts
    from manager.cli import request_check, requests, zk_args

    @contextmanager
    def no_zookeeper(*args: object, **kwargs: object) -> Iterator[object]:
        yield object()

    loads: list[object] = []
    real_load = zk_args.load_manager_config

    def counted(path: object) -> object:
        loads.append(path)
        return real_load(path)  # type: ignore[arg-type]

    asked: list[object] = []

    def facts(cluster: object, later: str, policy: object) -> ClusterFacts:
        asked.append(cluster)
        return ClusterFacts(frozenset({1, 2, 3}), {"t": 3})

    monkeypatch.setattr(zk_args, "load_manager_config", counted)
    monkeypatch.setattr(manager_config, "load_manager_config", counted)  # a late import's
    monkeypatch.setattr(requests, "zk_session", no_zookeeper)
    monkeypatch.setattr(requests, "require_cluster", lambda *args: None)
    monkeypatch.setattr(request_check, "read_facts", facts)
    config = ROOT / "configs" / "manager.example.yaml"
    code = main(["drain", "1", "--config", str(config)])
    assert code == Exit.NOT_DONE, capsys.readouterr().err
    assert loads == [config] and asked == ["127.0.0.1:9092"]


def test_an_interrupt_is_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(_: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    import manager.cli.plan as plan_cli

    monkeypatch.setattr(plan_cli, "run", interrupted)
    assert main(["plan", "--snapshot", str(EXAMPLES / "healthy.json")]) == Exit.INTERRUPTED


def test_the_kafka_address_comes_from_kmedic_bootstrap_as_the_flag_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from manager.cli.kafka_args import add_kafka_args, kafka_from

    for env in ("KMEDIC_BOOTSTRAP", "KMEDIC_BOOTSTRAP_SERVERS"):  # the former name still read
        monkeypatch.delenv("KMEDIC_BOOTSTRAP", raising=False)
        monkeypatch.delenv("KMEDIC_BOOTSTRAP_SERVERS", raising=False)
        monkeypatch.setenv(env, "10.0.0.9:9092")
        parser = argparse.ArgumentParser()
        add_kafka_args(parser, "a manager config")
        assert kafka_from(parser.parse_args([])) == ("10.0.0.9:9092", None)


@pytest.fixture
def silent_address() -> Iterator[str]:
    """An address that takes connections and never answers, as a hung broker or ZooKeeper
    does (a closed port answers at once: no bound is tried)."""
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:  # closed: the test is over
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()
    for conn in held:
        conn.close()


# Each bound docs/operations.md ("Exit codes", 5) gives, the command that has it, in seconds.
DOCUMENTED_BOUNDS = {
    ("topics", "check"): 5.0,
    ("actions", "tail"): 5.0,
    ("status",): 10.0,  # every ZooKeeper command: no session within 10 s
}


def test_each_documented_bound_is_the_time_a_command_waits_for_a_silent_service(
    silent_address: str,
) -> None:
    """Issue 72.3: `topics check` gave up after 10 s where the table says 5. Each command, run
    as an operator runs it against a service that accepts and never answers, ends 5 within
    its documented bound (and not before it: a command that gives up early calls a slow
    cluster down). The commands run side by side: the test waits the longest bound once."""
    import subprocess
    import sys

    service = {
        ("topics", "check"): ["--bootstrap", silent_address],
        ("actions", "tail"): ["--bootstrap", silent_address],
        ("status",): ["--zk", silent_address, "--cluster", "c"],
    }
    # Each command timed from its own main(), the clients it uses imported first: the
    # interpreter's start and the imports (seconds on two busy cores) are not the bound's.
    timed = (
        "import sys, time; from composition.cli import main; "
        "import kafka.admin, confluent_kafka.admin, kazoo.client, manager.cli.topics; "
        "started = time.monotonic(); code = main(sys.argv[1:]); "
        "print(round(time.monotonic() - started, 2)); sys.exit(code)"
    )
    running = {
        path: subprocess.Popen(
            [sys.executable, "-c", timed, *path, *service[path]],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for path in DOCUMENTED_BOUNDS
    }
    took = {}
    for path, proc in running.items():
        out, err = proc.communicate(timeout=60)
        took[path] = (proc.returncode, float(out.split()[-1]), err.strip()[-200:])
    for path, bound in DOCUMENTED_BOUNDS.items():
        code, seconds, err = took[path]
        assert code == Exit.UNREACHABLE and silent_address in err, (path, took[path])
        # Over the bound by what two busy cores add (3 s); a bound twice as long fails.
        assert bound <= seconds <= bound + 3, (path, bound, took[path])
