"""Where kmedic's znodes live and how their content is read (pure helpers shared by the
coordination modules). Layout under ``<root>/<cluster>``: ``manager/leader``,
``manager/epoch``, ``manager/plan`` (this package) and ``config/...`` (placement_store)."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoAuthError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from pydantic import BaseModel, ConfigDict, ValidationError

from kmedic.errors import KmedicError, Unreachable


class CoordinationError(KmedicError):
    """ZooKeeper is unreachable or answered something unexpected."""


class ZooKeeperUnreachable(CoordinationError, Unreachable):
    """ZooKeeper did not answer within the session's bound."""


def manager_path(root: str, cluster: str) -> str:
    if not cluster or "/" in cluster:
        raise KmedicError(f"invalid cluster name {cluster!r}: must be non-empty without '/'")
    return f"{root.rstrip('/')}/{cluster}/manager"


def read_znode(client: KazooClient, path: str) -> tuple[bytes, Any] | None:
    """A znode's data and stat, or None when it does not exist."""
    try:
        data, stat = client.get(path)
    except NoNodeError:
        return None
    except (KazooException, KazooTimeoutError) as exc:
        raise CoordinationError(f"cannot read {path}: {exc!r}") from exc
    return data, stat


def decode_json(data: bytes, path: str) -> dict[str, Any]:
    try:
        doc = json.loads(data.decode() or "{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CoordinationError(f"{path} does not hold JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise CoordinationError(f"{path} holds {type(doc).__name__}, not a JSON object")
    return doc


Doc = TypeVar("Doc", bound=BaseModel)


def parse_document(model: type[Doc], data: bytes, path: str, what: str) -> Doc:
    """A znode's JSON document as ``model``; anything else there is a CoordinationError
    naming the znode and each field at fault."""
    try:
        return model.model_validate(decode_json(data, path))
    except ValidationError as exc:
        raise CoordinationError(f"{path} holds no valid {what}: {field_problems(exc)}") from exc


def parse_epoch(data: bytes | None, path: str) -> int:
    """The epoch counter's value (an empty znode is epoch 0)."""
    text = data.decode().strip() if data else "0"
    try:
        return int(text or "0")
    except ValueError as exc:
        raise CoordinationError(f"{path} holds {text!r}, not an integer") from exc


class LeaderRecord(BaseModel):
    """The ``leader`` znode: who leads, with which fencing epoch (None for the moment between
    creating the znode and bumping the epoch) and on which ZooKeeper session."""

    model_config = ConfigDict(frozen=True)

    instance: str
    epoch: int | None = None
    session: int | None = None

    def to_bytes(self) -> bytes:
        return json.dumps(self.model_dump(), sort_keys=True).encode()


def parse_leader(data: bytes, path: str) -> LeaderRecord:
    """The leader znode's record; anything else there is a CoordinationError naming it."""
    try:
        return LeaderRecord.model_validate(decode_json(data, path))
    except ValidationError as exc:
        raise CoordinationError(
            f"{path} holds no valid leader record: {field_problems(exc)}"
        ) from exc


def field_problems(exc: ValidationError, prefix: str = "") -> str:
    """A validation error in one line, each problem naming its field."""
    return "; ".join(
        f"{prefix}{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}"
        for err in exc.errors()
    )


def require_cluster(client: KazooClient, root: str, cluster: str) -> None:
    """A read of a cluster kmedic has never stored anything for is a typo until shown
    otherwise: a KmedicError naming the clusters that are there ("no manager leads" sent
    on-call to debug ZooKeeper for `--cluster deom`)."""
    base = root.rstrip("/") or "/"
    try:
        if client.exists(f"{base.rstrip('/')}/{cluster}") is not None:
            return
        known = sorted(client.get_children(base)) if client.exists(base) is not None else []
    except NoAuthError as exc:  # it answered: a refusal, not an outage
        raise KmedicError(
            f"ZooKeeper refused to read {base}: {exc!r} (kmedic's tree carries kmedic's ACL: "
            "give its identity with --config, or --zk-username and --zk-password-file)"
        ) from exc
    except (KazooException, KazooTimeoutError) as exc:
        raise ZooKeeperUnreachable(f"cannot read {base}: {exc!r}") from exc
    named = f"known: {', '.join(known)}" if known else "none is known there yet"
    raise KmedicError(
        f"no cluster {cluster!r} in ZooKeeper under {base} ({named}); a manager stores its "
        "cluster there when it first starts"
    )
