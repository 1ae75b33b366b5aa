"""Log-directory capacity and disk failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.protocol.admin import DescribeLogDirsResponse

from agent.disk import disk_failure, log_dirs, statvfs_dir
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
