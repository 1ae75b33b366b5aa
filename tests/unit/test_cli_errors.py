"""The CLI turns bad input into one clear line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from composition.cli import main
from kmedic.errors import KmedicError


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["no-such-command"])
    assert exit_info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err


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
    assert main(["cluster", "--dir", str(tmp_path), "up", "--brokers", "0"]) == 1
    assert "--brokers must be at least 1" in capsys.readouterr().err


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
