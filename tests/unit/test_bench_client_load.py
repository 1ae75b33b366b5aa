"""bench_clients' load scenario (bench/client_load.py): the filler's rate for each share of the
link, the rates read back from the timeline's samples, the fetch sizes the brokers get, and the
scenario's bad arguments refused before any cluster starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from bench_clients import fetch_sizes, label, root_drops
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


def test_drops_are_read_from_either_devices_root_qdisc() -> None:
    # The ingress side is the IFB device's qdisc 2: (read as 1: only, its drops went unseen).
    ingress = (
        "qdisc htb 2: root refcnt 2 r2q 1000 default 0x1 direct_packets_stat 0 direct_qlen 32\n"
        " Sent 882157056 bytes 311884 pkt (dropped 17, overlimits 30440 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
    )
    egress = ingress.replace("htb 2:", "htb 1:").replace("dropped 17", "dropped 4")
    assert root_drops(ingress) == 17
    assert root_drops(egress) == 4
    assert root_drops("") == 0


def test_a_fixed_rate_is_named_with_its_figure_not_rounded_away() -> None:
    # A 10 Mbit/s link's fixed setting (40 % of it) used to read "0 MB/s" in the tables.
    assert label(500_000) == "fixed 0.5 MB/s"
    assert label(50_000_000) == "fixed 50 MB/s"
    assert (label(None), label("adaptive")) == ("none", "adaptive")
