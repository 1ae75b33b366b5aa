"""Log-directory capacity and disk failures."""

from __future__ import annotations

from pathlib import Path

from agent.disk import disk_failure, log_dirs, statvfs_dir
from kmedic.metadata import LogDirInfo, parse_log_dirs


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


def test_parse_describe_log_dirs_answer() -> None:
    # The shape kafka-python's describe_log_dirs returned from a Kafka 4.1 broker.
    answer = [
        {
            "broker": 1,
            "log_dirs": [
                {
                    "error_code": 0,
                    "log_dir": "/data/broker-1",
                    "topics": [
                        {
                            "name": "orders",
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "partition_size": 100,
                                    "offset_lag": 0,
                                    "is_future_key": False,
                                },
                                {
                                    "partition_index": 1,
                                    "partition_size": 50,
                                    "offset_lag": 0,
                                    "is_future_key": True,
                                },
                            ],
                        }
                    ],
                    "total_bytes": 270553174016,
                    "usable_bytes": -1,
                }
            ],
        }
    ]
    (d,) = parse_log_dirs(answer, 1) or []
    assert d.path == "/data/broker-1"
    assert d.replica_bytes == 100  # a future replica (moving between dirs) is not counted
    assert d.total_bytes == 270553174016 and d.usable_bytes is None
    assert parse_log_dirs(answer, 2) is None
