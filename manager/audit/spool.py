"""The local audit spool: an append-only, fsync'd file of JSON lines plus a replay cursor.

``audit-spool.jsonl`` holds one record per line, each appended and fsync'd before ``append``
returns. ``audit-spool.cursor`` holds the byte offset of the first line not yet replayed; it is
replaced atomically (write, fsync, rename). Once every line is replayed the file is emptied.
A torn last line (a crash in the middle of an append, never acknowledged) is cut off on open.
Lines that are not valid records are moved to ``audit-spool.rejected`` (kept, never replayed).
"""

from __future__ import annotations

import os
from pathlib import Path

from kmedic.errors import KmedicError
from kmedic.logging import get_logger

log = get_logger(__name__)


class Spool:
    def __init__(self, directory: Path) -> None:
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KmedicError(
                f"cannot create the audit spool directory {directory}: {exc}"
            ) from exc
        self.directory = directory
        self.path = directory / "audit-spool.jsonl"
        self.cursor_path = directory / "audit-spool.cursor"
        self.rejected_path = directory / "audit-spool.rejected"
        self.path.touch(exist_ok=True)
        self._cut_torn_tail()
        self._cursor = self._read_cursor()
        self._pending = self._count_from(self._cursor)
        self._fh = open(self.path, "ab")  # noqa: SIM115 - kept open for the spool's lifetime

    def pending(self) -> int:
        return self._pending

    def append(self, line: bytes) -> None:
        if b"\n" in line:
            raise KmedicError("an audit spool line must not contain a newline")
        self._fh.write(line + b"\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._pending += 1

    def peek(self, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` unreplayed lines, oldest first, each with the offset just past it."""
        out: list[tuple[int, bytes]] = []
        with open(self.path, "rb") as fh:
            fh.seek(self._cursor)
            offset = self._cursor
            while len(out) < limit:
                line = fh.readline()
                if not line.endswith(b"\n"):
                    break
                offset += len(line)
                out.append((offset, line[:-1]))
        return out

    def commit(self, offset: int) -> None:
        """Everything before ``offset`` reached the primary: advance the cursor past it."""
        if offset <= self._cursor:
            return
        done = self._count_between(self._cursor, offset)
        self._write_cursor(offset)
        self._cursor = offset
        self._pending -= done
        if self._pending == 0:
            # Nothing left to replay: empty the file so the spool does not grow forever.
            self._fh.truncate(0)
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._write_cursor(0)
            self._cursor = 0

    def quarantine(self, line: bytes, why: str) -> None:
        with open(self.rejected_path, "ab") as fh:
            fh.write(line + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        log.error("audit_spool_line_rejected", reason=why, kept_in=str(self.rejected_path))

    def close(self) -> None:
        self._fh.close()

    # -- internals -------------------------------------------------------------------------

    def _cut_torn_tail(self) -> None:
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            log.warning("audit_spool_torn_tail_cut", bytes=len(data) - keep)
            with open(self.path, "r+b") as fh:
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())

    def _read_cursor(self) -> int:
        size = self.path.stat().st_size
        try:
            text = self.cursor_path.read_text().strip()
        except FileNotFoundError:
            return 0
        try:
            cursor = int(text)
        except ValueError as exc:
            raise KmedicError(
                f"{self.cursor_path} holds {text!r}, not a byte offset; "
                "fix or remove it (removing it replays the whole spool, readers dedupe by id)"
            ) from exc
        # Past the end only after a crash between emptying the file and resetting the cursor.
        return 0 if cursor > size else cursor

    def _write_cursor(self, offset: int) -> None:
        tmp = self.cursor_path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            fh.write(f"{offset}\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.cursor_path)
        dir_fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def _count_from(self, start: int) -> int:
        return self._count_between(start, None)

    def _count_between(self, start: int, end: int | None) -> int:
        with open(self.path, "rb") as fh:
            fh.seek(start)
            data = fh.read() if end is None else fh.read(end - start)
        return data.count(b"\n")
