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


def log_dirs(
    admin_dirs: list[LogDirInfo] | None, configured: list[str], share_bytes: int | None = None
) -> list[bs.LogDir]:
    """The broker's view when available; else statvfs of the configured (or last known) paths.
    With ``share_bytes``, each directory's capacity is the broker's share of its file system
    (``in_share``)."""
    dirs = (
        [from_admin(d) for d in admin_dirs] if admin_dirs else [statvfs_dir(p) for p in configured]
    )
    return dirs if share_bytes is None else [in_share(d, share_bytes) for d in dirs]


def in_share(d: bs.LogDir, share_bytes: int) -> bs.LogDir:
    """A log directory on a file system other brokers (or anything else) also fill, read as
    the broker's share of it: ``share_bytes`` in size, used by the broker's own replicas only,
    and never more free than the file system itself has. Without the share, a broker beside
    others reads their bytes as its own: size minus available counts every byte on the disk.
    A directory in error, or one whose size is unknown, is left as read."""
    if d.error is not None or d.free_bytes is None:
        return d
    own = d.replica_bytes or 0
    free = max(0, min(share_bytes - own, d.free_bytes))
    return d.model_copy(update={"total_bytes": share_bytes, "free_bytes": free})


def disk_failure(dirs: list[bs.LogDir]) -> bs.Failure | None:
    bad = [d for d in dirs if d.error is not None]
    if not bad:
        return None
    return bs.Failure(reason="disk_error", message="; ".join(f"{d.path}: {d.error}" for d in bad))
