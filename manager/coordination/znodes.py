"""Where kmedic's znodes live and how their content is read (pure helpers shared by the
coordination modules). Layout under ``<root>/<cluster>``: ``manager/leader``,
``manager/epoch``, ``manager/plan`` (this package) and ``config/...`` (placement_store)."""

from __future__ import annotations

import json
from typing import Any

from kmedic.errors import KmedicError


class CoordinationError(KmedicError):
    """ZooKeeper is unreachable or answered something unexpected."""


def manager_path(root: str, cluster: str) -> str:
    if not cluster or "/" in cluster:
        raise KmedicError(f"invalid cluster name {cluster!r}: must be non-empty without '/'")
    return f"{root.rstrip('/')}/{cluster}/manager"


def decode_json(data: bytes, path: str) -> dict[str, Any]:
    try:
        doc = json.loads(data.decode() or "{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CoordinationError(f"{path} does not hold JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise CoordinationError(f"{path} holds {type(doc).__name__}, not a JSON object")
    return doc


def parse_epoch(data: bytes | None, path: str) -> int:
    """The epoch counter's value (an empty znode is epoch 0)."""
    text = data.decode().strip() if data else "0"
    try:
        return int(text or "0")
    except ValueError as exc:
        raise CoordinationError(f"{path} holds {text!r}, not an integer") from exc
