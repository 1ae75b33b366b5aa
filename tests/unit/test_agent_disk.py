"""Log-directory capacity and disk failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.admin import DescribeLogDirsResponse

from agent.disk import disk_failure, in_share, log_dirs, statvfs_dir
from kmedic.metadata import LogDirInfo, log_dir_of


def test_statvfs_of_a_real_directory(tmp_path: Path) -> None:
    d = statvfs_dir(str(tmp_path))
    assert d.error is None
    assert d.total_bytes is not None and d.free_bytes is not None
    assert 0 <= d.free_bytes <= d.total_bytes


def test_missing_directory_is_a_disk_error(tmp_path: Path) -> None:
    d = statvfs_dir(str(tmp_path / "gone"))
    assert d.total_bytes is None and d.error is not None
    failure = disk_failure([d])
    assert failure is not None and failure.reason == "disk_error"
    assert str(tmp_path / "gone") in failure.message


def test_broker_figures_win_and_unknown_capacity_uses_statvfs(tmp_path: Path) -> None:
    known = LogDirInfo("/data", 1000, 400, 123, 0)
    unknown = LogDirInfo(str(tmp_path), None, None, 5, 0)
    broken = LogDirInfo("/bad", 1000, 10, 0, 57)
    dirs = log_dirs([known, unknown, broken], configured=["/ignored"])
    assert (dirs[0].total_bytes, dirs[0].free_bytes, dirs[0].replica_bytes) == (1000, 400, 123)
    assert dirs[1].total_bytes is not None and dirs[1].replica_bytes == 5
    assert dirs[2].error is not None and "57" in dirs[2].error
    failure = disk_failure(dirs)
    assert failure is not None and failure.message.startswith("/bad")
    assert disk_failure(dirs[:2]) is None


GB = 1_000_000_000


def test_a_share_of_a_full_host_disk_counts_only_the_brokers_own_replicas() -> None:
    """The state a clean-clone CI run met: the brokers' one file system 252 GB, 35 GB
    available (86 % used by size minus available, over the 0.85 disk limit), each broker
    holding a few MB. Read whole, every broker looked full and every heal was refused for
    capacity; read as a 20 GB share, a broker's used bytes are its replicas."""
    host = LogDirInfo("/data", 252 * GB, 35 * GB, 6_798_042, 0)
    (whole,) = log_dirs([host], configured=[])
    assert whole.total_bytes is not None and whole.free_bytes is not None
    assert (whole.total_bytes - whole.free_bytes) / whole.total_bytes > 0.85
    (shared,) = log_dirs([host], configured=[], share_bytes=20 * GB)
    assert shared.total_bytes == 20 * GB
    assert shared.free_bytes is not None
    assert shared.total_bytes - shared.free_bytes == 6_798_042


def test_a_share_is_never_freer_than_its_file_system() -> None:
    (d,) = log_dirs([LogDirInfo("/data", 252 * GB, 2 * GB, GB, 0)], [], share_bytes=20 * GB)
    assert (d.total_bytes, d.free_bytes) == (20 * GB, 2 * GB)


def test_a_share_leaves_a_broken_or_unknown_directory_as_read(tmp_path: Path) -> None:
    broken, unknown = log_dirs(
        [LogDirInfo("/bad", 1000, 10, 0, 57), LogDirInfo(str(tmp_path / "gone"), None, None, 0, 0)],
        [],
        share_bytes=20 * GB,
    )
    assert (broken.total_bytes, broken.free_bytes) == (1000, 10) and broken.error is not None
    assert unknown.error is not None and unknown.total_bytes is None


@given(
    size=st.integers(1, 10**13),
    available=st.integers(0, 10**13),
    replicas=st.one_of(st.none(), st.integers(0, 10**13)),
    share=st.integers(1, 10**13),
)
def test_a_share_is_bounded_by_itself_and_the_file_system(
    size: int, available: int, replicas: int | None, share: int
) -> None:
    d = in_share(
        log_dirs([LogDirInfo("/d", size, min(size, available), replicas, 0)], [])[0], share
    )
    assert d.total_bytes == share and d.free_bytes is not None
    assert 0 <= d.free_bytes <= min(share, min(size, available))
    assert d.free_bytes <= max(0, share - (replicas or 0))


def test_no_broker_answer_uses_configured_paths(tmp_path: Path) -> None:
    dirs = log_dirs(None, configured=[str(tmp_path)])
    assert [d.path for d in dirs] == [str(tmp_path)]


@pytest.mark.parametrize(
    "version",
    range(DescribeLogDirsResponse.min_version, DescribeLogDirsResponse.max_version + 1),
)
def test_a_describe_log_dirs_answer_read_at_every_version(version: int) -> None:
    """A DescribeLogDirs answer as the broker encodes it, decoded by kafka-python at that
    version: a future replica (moving between directories) is not counted, -1 or an absent
    capacity (before version 4) is unknown, a cordon (KIP-1066) is read from version 5 on."""
    result_cls = DescribeLogDirsResponse.DescribeLogDirsResult
    topic_cls = result_cls.DescribeLogDirsTopic
    part_cls = topic_cls.DescribeLogDirsPartition

    def part(index: int, size: int, future: bool) -> object:
        return part_cls(
            partition_index=index, partition_size=size, offset_lag=0, is_future_key=future
        )

    answer = DescribeLogDirsResponse(
        throttle_time_ms=0,
        error_code=0,
        results=[
            result_cls(
                error_code=0,
                log_dir="/data/broker-1",
                topics=[
                    topic_cls(name="orders", partitions=[part(0, 100, False), part(1, 50, True)])
                ],
                total_bytes=270553174016,
                usable_bytes=-1,
                is_cordoned=True,
            ),
            result_cls(
                error_code=56, log_dir="/data/broken", topics=[], total_bytes=-1, usable_bytes=-1
            ),
        ],
    )
    decoded = DescribeLogDirsResponse.decode(bytes(answer.encode(version=version)), version=version)
    d, broken = (log_dir_of(r) for r in decoded.results)
    assert d.path == "/data/broker-1" and d.replica_bytes == 100 and d.error_code == 0
    assert d.total_bytes == (270553174016 if version >= 4 else None)
    assert d.usable_bytes is None
    assert d.cordoned == (version >= 5) and not broken.cordoned
    assert log_dirs([d], configured=[])[0].cordoned == (version >= 5)  # carried to the record
    assert (broken.path, broken.replica_bytes, broken.error_code) == ("/data/broken", 0, 56)
