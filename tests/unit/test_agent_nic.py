"""The link speed the agent reads on the broker's host (agent/nic.py): the kernel's figure for
the interface holding the broker's address, and plainly why not when it cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.nic import configured_nic, interface_of, nic_for, speed_of


def sysfs(tmp_path: Path, **speeds: str) -> Path:
    for name, text in speeds.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "speed").write_text(text + "\n")
    return tmp_path


def test_a_link_speed_in_mbit_is_bytes_per_second_each_way(tmp_path: Path) -> None:
    root = sysfs(tmp_path, eth0="10000", eth1="1000")
    assert speed_of("eth0", root) == (1_250_000_000, None)
    assert speed_of("eth1", root) == (125_000_000, None)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("-1", "eth0 reports no link speed (-1)"),
        ("0", "no link speed (0)"),
        ("fast", "holds no number"),
    ],
)
def test_a_speed_the_kernel_does_not_know_is_said(tmp_path: Path, text: str, says: str) -> None:
    speed, note = speed_of("eth0", sysfs(tmp_path, eth0=text))
    assert speed is None and note is not None and says in note


def test_an_interface_without_a_speed_file_is_said(tmp_path: Path) -> None:
    speed, note = speed_of("veth9", tmp_path)
    assert speed is None and note is not None and "veth9/speed" in note


def test_loopback_and_unknown_hosts_have_no_speed_and_say_why() -> None:
    lo = nic_for("127.0.0.1")
    assert (lo.interface, lo.speed_bytes_per_s, lo.note) == (
        "lo",
        None,
        "the broker listens on loopback",
    )
    nowhere = nic_for("no-such-host.invalid")
    assert nowhere.speed_bytes_per_s is None and "cannot resolve no-such-host.invalid" in (
        nowhere.note or ""
    )


def test_the_kernel_names_the_interface_holding_an_address() -> None:
    assert interface_of("127.0.0.1") == "lo"
    assert interface_of("192.0.2.255") is None  # TEST-NET-1 broadcast: no interface holds it


def test_a_configured_speed_replaces_the_kernels_and_says_so() -> None:
    nic = configured_nic("127.0.1.3", 40)
    assert nic.interface == "lo"
    assert nic.speed_bytes_per_s == 5_000_000
    assert nic.note == "nic_mbps 40 in the agent's config"
    assert configured_nic("127.0.0.1", 2.5).speed_bytes_per_s == 312_500
