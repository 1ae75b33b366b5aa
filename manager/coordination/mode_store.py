"""The manager's mode, switched at run time: ``<root>/<cluster>/manager/mode`` holds
``{"mode", "by", "set_ms", "why"}``, written by ``kmedic mode act|observe`` on a plain session.

Without the znode every instance runs in the mode of its config (``mode:``, default
``observe``). With it, every instance reads the same mode in its cycle's one ZooKeeper read, so
a switch reaches the leader and survives a failover; the leader audits each change it sees. The
operator's command writes it (an operator's act, like a request: not fenced by an epoch), and
``kmedic mode --clear`` (``DELETE /api/v1/mode``) deletes it: each config decides again. An
instance started with ``--mode`` runs in that mode whatever the znode says
(manager/daemon/mode.py has the precedence).
"""

from __future__ import annotations

import json
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from pydantic import BaseModel, ConfigDict, Field

from manager.coordination.znodes import CoordinationError, parse_document, read_znode
from manager.model.mode import Mode


class ModeRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    mode: Mode
    by: str = ""
    set_ms: int = Field(default=0, ge=0)
    why: str = ""

    def sentence(self) -> str:
        said = f": {self.why}" if self.why else ""
        return f"{self.mode}, set by {self.by or 'an operator'}{said}"


def mode_path(base: str) -> str:
    return f"{base}/mode"


def parse_mode(data: bytes, path: str) -> ModeRecord:
    """The mode znode's record; anything else there is a CoordinationError naming it."""
    return parse_document(ModeRecord, data, path, "mode")


def read_mode(client: KazooClient, base: str) -> ModeRecord | None:
    path = mode_path(base)
    found = read_znode(client, path)
    return None if found is None else parse_mode(found[0], path)


def set_mode(client: KazooClient, base: str, mode: Mode, by: str, why: str) -> ModeRecord:
    record = ModeRecord(mode=mode, by=by, set_ms=int(time.time() * 1000), why=why)
    path = mode_path(base)
    payload = json.dumps(record.model_dump(), sort_keys=True).encode()
    try:
        if client.exists(path) is None:
            client.create(path, payload, makepath=True)
        else:
            client.set(path, payload)
    except (KazooException, KazooTimeoutError) as exc:
        raise CoordinationError(f"cannot write {path}: {exc!r}") from exc
    return record


def clear_mode(client: KazooClient, base: str) -> ModeRecord | None:
    """Delete the run-time mode: every instance runs in its config's (or its flag's) mode
    again. The record cleared, or None when none was set."""
    path = mode_path(base)
    try:
        was = read_mode(client, base)
        if was is not None:
            client.delete(path)
    except NoNodeError:
        return None  # cleared by someone else in between
    except (KazooException, KazooTimeoutError) as exc:
        raise CoordinationError(f"cannot delete {path}: {exc!r}") from exc
    return was
