"""bench_clients' load scenario (bench/client_load.py): the filler's rate for each share of the
link, the rates read back from the timeline's samples, the fetch sizes the brokers get, and the
scenario's bad arguments refused before any cluster starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_clients import fetch_sizes
from client_load import DESTINATION, LEADERS, filler_rate, link_rates
from timeline import Sample

MB = 1_000_000
BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_the_filler_writes_what_the_link_lacks_of_the_share_asked() -> None:
    assert filler_rate(0.0, 5 * MB, 1.5 * MB) == 0.0  # the first step: the clients alone
    assert filler_rate(0.5, 5 * MB, 1.5 * MB) == pytest.approx(1.0 * MB)
    assert filler_rate(0.2, 5 * MB, 1.5 * MB) == 0.0  # the clients alone fill more already


def test_the_link_rates_are_read_over_the_hold_from_the_tc_samples() -> None:
    brokers = sorted({DESTINATION, *LEADERS})

    def sample(at: float, scale: int) -> Sample:
        return Sample(at, {b: (scale * b * MB, scale * 10 * MB) for b in brokers}, 0)

    samples = [sample(90.0, 0), sample(100.0, 1), sample(110.0, 3), sample(130.0, 9)]
    link_in, busiest_out = link_rates(samples, 100.0, 110.0)
    assert link_in == pytest.approx(2.0 * MB)  # broker 3 received 20 MB in 10 s
    assert busiest_out == pytest.approx(max(LEADERS) * 2 * MB / 10)  # broker 5 sent 10 MB


def test_no_sample_in_the_hold_is_an_error_that_says_so() -> None:
    with pytest.raises(SystemExit, match="no link readings"):
        link_rates([Sample(1.0, {}, 0)], 100.0, 110.0)


def test_fetch_sizes_cut_a_partitions_chunk_and_a_whole_answer() -> None:
    assert fetch_sizes(0) == {}
    assert fetch_sizes(4) == {
        "replica.fetch.max.bytes": "4096",
        "replica.fetch.response.max.bytes": "4096",
    }
    assert fetch_sizes(4, 40)["replica.fetch.response.max.bytes"] == "40960"


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--nic-mbps", "0"], "--scenario load fills a shaped link"),
        (["--levels", "0.5,1.5"], "--levels: each share of the link"),
        (["--levels", "half"], "--levels: not a list of shares"),
    ],
)
def test_bad_load_arguments_are_refused_before_a_cluster_starts(
    arguments: list[str], said: str
) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "bench_clients.py"), "--scenario", "load", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert said in done.stderr
