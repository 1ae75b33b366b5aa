"""`kmedic plan`: exit codes 0 / 2 / 1, text and JSON output, no tracebacks."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from composition.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "configs" / "examples"


@pytest.mark.parametrize(
    ("example", "code", "outcome"),
    [
        ("healthy.json", 0, "noop"),
        ("dead-broker.json", 0, "act"),
        ("hot-broker.json", 0, "act"),
        ("two-racks-lost.json", 3, "refuse"),
    ],
)
def test_examples_exit_codes_and_json(
    example: str, code: int, outcome: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plan", "--snapshot", str(EXAMPLES / example), "--json"]) == code
    decision = json.loads(capsys.readouterr().out)
    assert decision["outcome"] == outcome
    assert {"reasons", "actions", "bytes_to_move", "loads", "summary", "kind"} <= set(decision)
    if outcome == "refuse":
        assert decision["reasons"] and all(r["code"] and r["message"] for r in decision["reasons"])
    for load in decision["loads"]:
        assert {"broker", "before", "after"} == set(load)


def test_text_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--snapshot", str(EXAMPLES / "dead-broker.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("decision: act (heal)")
    assert "reassign orders:" in out
    # Each broker's capacity, and where it came from (not recorded in this hand-written one).
    assert "capacity: broker 1: network " in out and "(not recorded)" in out


def test_bad_input_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads((EXAMPLES / "healthy.json").read_text())
    data["brokers"][2]["rack"] = "no-slash"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    assert main(["plan", "--snapshot", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "brokers.2.rack" in err
    assert "Traceback" not in err


def test_unreadable_and_non_json_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--snapshot", str(tmp_path / "missing.json")]) == 1
    assert "cannot read snapshot" in capsys.readouterr().err
    garbage = tmp_path / "garbage.json"
    garbage.write_text("[1, 2")
    assert main(["plan", "--snapshot", str(garbage)]) == 1
    assert "garbage.json" in capsys.readouterr().err


def test_capacity_lines_say_where_each_figure_came_from() -> None:
    from manager.cli.plan import capacity_lines
    from manager.model.snapshot import Capacity, CapacitySource
    from manager.model.snapshot_file import load_snapshot

    snap = load_snapshot(str(EXAMPLES / "healthy.json"))
    first = snap.brokers[0].model_copy(
        update={
            "capacity": Capacity(
                network_in_bytes_per_s=1.25e9, network_out_bytes_per_s=1.25e9, disk_bytes=2 * 10**12
            ),
            "capacity_source": CapacitySource(network="agent", disk="log_dirs", interface="eth0"),
        }
    )
    snap = snap.model_copy(update={"brokers": (first, *snap.brokers[1:])})
    assert capacity_lines(snap)[0] == (
        f"capacity: broker {first.id}: network 1250 MB/s (agent: eth0), disk 2000 GB (log dirs)"
    )


def test_a_plan_run_in_process_leaves_nothing_frozen_and_the_collector_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--snapshot", str(EXAMPLES / "dead-broker.json")]) == 0
    capsys.readouterr()
    assert gc.get_freeze_count() == 0 and gc.isenabled()
