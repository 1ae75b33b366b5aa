"""bench_heal's report names the Kafka nodes' JVMs it ran on, and a race on server JVMs is
preceded by one warm-up heal that is not counted (C2 compiles the copy's path in the first)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_heal

KAFKA = {"bytes": 672e6, "bound": 269e6, "off_victim": 24, "violations": 0}


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--produce-mb", type=int, default=512)
    parser.add_argument("--quick", action="store_true")
    bench_heal.add_jvm_argument(parser, default="server")
    bench_heal.as_shipped.add_arguments(parser)
    return parser.parse_args(list(argv))


def _run(replicated_s: float) -> bench_heal.Run:
    return bench_heal.Run(None, 6.0, 21.0, replicated_s, 300_000_000, 300_000_000, 3e8, 0, 0)


@pytest.mark.parametrize(
    ("argv", "warm"),
    [((), True), (("--jvm", "light"), False), (("--quick",), False)],
)
def test_only_a_full_race_on_server_jvms_warms_up_first(argv: tuple[str, ...], warm: bool) -> None:
    assert bench_heal.warm_up(_args(*argv)) is warm


def test_the_report_names_the_jvms_and_the_warm_up() -> None:
    server = bench_heal.report(_args(), 1.6e9, [_run(23.6)], KAFKA)
    assert "as Kafka's launcher starts them (`--jvm server`: G1, C2)" in server
    assert "after one warm-up heal not counted" in server
    assert "| none | 6.0 s (6.0-6.0) | 21.0 s (21.0-21.0) | 23.6 s (23.6-23.6) |" in server
    light = bench_heal.report(_args("--jvm", "light"), 1.6e9, [_run(24.9)], KAFKA)
    assert "light, as the tests start them (C1, the serial collector)" in light
    assert "warm-up" not in light


def test_an_unknown_jvm_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        _args("--jvm", "client")
    assert exit_.value.code == 2
    assert "invalid choice: 'client'" in capsys.readouterr().err


def test_the_report_says_whether_it_ran_as_shipped_and_names_each_departure() -> None:
    """Issue 73: a figure is read at the settings it was measured at. As shipped: kmedic's
    default intervals (from its config models) and brokers at Kafka's defaults; anything else
    is named in the table's first line."""
    shipped = bench_heal.report(_args(), 1.6e9, [_run(23.6)], KAFKA)
    assert "**As shipped**: kmedic's defaults (agents every 60 s (5 s while their broker " in (
        shipped
    )
    assert "a cycle every 30 s, agents every 60 s" in shipped
    tuned = bench_heal.report(
        _args("--agent-interval", "2", "--manager-interval", "3", "--bench-brokers"),
        1.6e9,
        [_run(23.6)],
        KAFKA,
    )
    first = tuned.splitlines()[2]
    assert first.startswith("**Not as shipped**"), first
    for said in ("agents every 2 s (shipped 60 s)", "a cycle every 3 s (shipped 30 s)"):
        assert said in first, first
    assert "local cluster's tunings (`--bench-brokers`)" in first
    quick = _args("--quick")
    bench_heal.as_shipped.smoke(quick)
    assert (quick.agent_interval, quick.manager_interval) == (2.0, 3.0)
