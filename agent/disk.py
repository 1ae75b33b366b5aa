"""Log-directory capacity: the broker's own figures when it gives them, statvfs otherwise."""

from __future__ import annotations

import os

from kmedic import brokerstats as bs
from kmedic.metadata import LogDirInfo


def statvfs_dir(path: str, replica_bytes: int | None = None) -> bs.LogDir:
    """Capacity of the file system holding ``path`` (the agent runs on the broker's host)."""
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return bs.LogDir(
            path=path,
            total_bytes=None,
            free_bytes=None,
            replica_bytes=replica_bytes,
            error=f"statvfs failed: {exc.strerror or exc}",
        )
    return bs.LogDir(
        path=path,
        total_bytes=st.f_blocks * st.f_frsize,
        free_bytes=st.f_bavail * st.f_frsize,
        replica_bytes=replica_bytes,
        error=None,
    )


def from_admin(info: LogDirInfo) -> bs.LogDir:
    """One directory as DescribeLogDirs reported it, with statvfs filling unknown capacity."""
    if info.error_code != 0:
        return bs.LogDir(
            path=info.path,
            total_bytes=info.total_bytes,
            free_bytes=info.usable_bytes,
            replica_bytes=info.replica_bytes,
            error=f"broker reports error code {info.error_code} for this log directory",
            cordoned=info.cordoned,
        )
    if info.total_bytes is None or info.usable_bytes is None:
        return statvfs_dir(info.path, info.replica_bytes).model_copy(
            update={"cordoned": info.cordoned}
        )
    return bs.LogDir(
        path=info.path,
        total_bytes=info.total_bytes,
        free_bytes=info.usable_bytes,
        replica_bytes=info.replica_bytes,
        error=None,
        cordoned=info.cordoned,
    )


def log_dirs(admin_dirs: list[LogDirInfo] | None, configured: list[str]) -> list[bs.LogDir]:
    """The broker's view when available; else statvfs of the configured (or last known) paths."""
    if admin_dirs:
        return [from_admin(d) for d in admin_dirs]
    return [statvfs_dir(p) for p in configured]


def disk_failure(dirs: list[bs.LogDir]) -> bs.Failure | None:
    bad = [d for d in dirs if d.error is not None]
    if not bad:
        return None
    return bs.Failure(reason="disk_error", message="; ".join(f"{d.path}: {d.error}" for d in bad))
