"""Operator requests (``kmedic drain|fill|demote``), kept in ZooKeeper at
``<root>/<cluster>/manager/requests/req-NNNNNNNNNN``, one JSON document each.

Durability and ownership, in order:

- An operator's tool creates a request (a sequential znode: ids are unique and ordered) in
  state ``pending``. Nothing else creates one.
- The leading manager moves it to ``running`` when it first acts on it, and to ``done`` when
  the goal is met (or ``failed`` when it can never be: a broker that does not exist). These
  writes are fenced like the plan's: a deposed leader's write fails, so a successor picks the
  request up exactly where the stored state says.
- ``cancel`` is the operator's: a compare-and-set to ``cancelled`` unless it is already over.
  The leader then plans nothing more for it; moves in flight finish (Kafka runs them anyway).
- Requests are never deleted by kmedic: the finished ones are the record of what was asked.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from kmedic.errors import KmedicError
from manager.coordination.fenced import FencedSession
from manager.coordination.znodes import CoordinationError, decode_json
from manager.model.snapshot import OperatorRequest, RequestKind, request_subject

# partial: the leader gave up on it with part of its goal met (docs/operations-requests.md).
RequestState = Literal["pending", "running", "done", "partial", "failed", "cancelled"]
OPEN: frozenset[str] = frozenset({"pending", "running"})
PREFIX = "req-"


@dataclass(frozen=True)
class StoredRequest:
    id: str
    kind: RequestKind
    brokers: tuple[int, ...]
    state: RequestState
    created_ms: int
    by: str
    updated_ms: int
    note: str
    version: int
    topic: str | None = None  # set_rf
    replication_factor: int | None = None  # set_rf

    @property
    def open(self) -> bool:
        return self.state in OPEN

    @property
    def subject(self) -> str:
        return request_subject(self.kind, self.brokers, self.topic, self.replication_factor)

    def for_planner(self) -> OperatorRequest:
        return OperatorRequest(
            id=self.id,
            kind=self.kind,
            brokers=self.brokers,
            topic=self.topic,
            replication_factor=self.replication_factor,
            created_ms=self.created_ms,
        )

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"id": self.id, "kind": self.kind, "brokers": list(self.brokers)}
        if self.kind == "set_rf":
            doc |= {"topic": self.topic, "replication_factor": self.replication_factor}
        return doc | {
            "state": self.state,
            "created_ms": self.created_ms,
            "by": self.by,
            "updated_ms": self.updated_ms,
            "note": self.note,
        }

    def sentence(self) -> str:
        note = f": {self.note}" if self.note else ""
        return f"request {self.id} ({self.subject}) is {self.state}{note}"


def requests_path(base: str) -> str:
    return f"{base}/requests"


def parse_request(request_id: str, doc: Mapping[str, Any], version: int) -> StoredRequest:
    kind: Any = doc.get("kind")
    state: Any = doc.get("state")
    if kind not in get_args(RequestKind) or state not in get_args(RequestState):
        raise CoordinationError(f"request {request_id} holds kind {kind!r} and state {state!r}")
    try:
        brokers = tuple(int(b) for b in doc.get("brokers") or ())
        created, updated = int(doc.get("created_ms", 0)), int(doc.get("updated_ms", 0))
        rf = doc.get("replication_factor")
        rf = None if rf is None else int(rf)
    except (TypeError, ValueError) as exc:
        raise CoordinationError(f"request {request_id} is malformed: {exc}") from exc
    topic = doc.get("topic")
    if kind == "set_rf" and (not isinstance(topic, str) or not topic or rf is None or rf < 1):
        raise CoordinationError(
            f"request {request_id} is malformed: a set_rf request needs a topic and a "
            f"replication_factor of 1 or more, not {topic!r} and {rf!r}"
        )
    if kind != "set_rf" and not brokers:
        raise CoordinationError(f"request {request_id} is malformed: a {kind} names no broker")
    return StoredRequest(
        topic=topic if kind == "set_rf" else None,
        replication_factor=rf if kind == "set_rf" else None,
        id=request_id,
        kind=kind,
        brokers=brokers,
        state=state,
        created_ms=created,
        by=str(doc.get("by", "")),
        updated_ms=updated,
        note=str(doc.get("note", "")),
        version=version,
    )


def read_requests(client: KazooClient, base: str) -> tuple[StoredRequest, ...]:
    """Every request, oldest first."""
    path = requests_path(base)
    try:
        children = sorted(c for c in client.get_children(path) if c.startswith(PREFIX))
        found = [(c, client.get_async(f"{path}/{c}")) for c in children]
        out = []
        for child, request in found:
            try:
                data, stat = request.get(timeout=30)
            except NoNodeError:
                continue
            doc = decode_json(data, f"{path}/{child}")
            out.append(parse_request(child, doc, int(stat.version)))
    except NoNodeError:
        return ()
    except (KazooException, KazooTimeoutError) as exc:
        raise CoordinationError(f"cannot read {path} from ZooKeeper: {exc!r}") from exc
    return tuple(out)


def submit(
    client: KazooClient,
    base: str,
    kind: RequestKind,
    brokers: Iterable[int],
    by: str,
    *,
    topic: str | None = None,
    replication_factor: int | None = None,
) -> StoredRequest:
    """Store a new pending request; its id is the sequential znode's name."""
    ids = sorted(set(brokers))
    wanted: dict[str, Any] = {}
    if kind == "set_rf":
        if not topic or replication_factor is None or replication_factor < 1:
            raise KmedicError(
                "a set_rf request needs a topic and a replication factor of 1 or more"
            )
        wanted = {"topic": topic, "replication_factor": replication_factor}
    elif not ids:
        raise KmedicError(f"a {kind} request needs at least one broker id")
    now = int(time.time() * 1000)
    doc = {
        "kind": kind,
        "brokers": ids,
        **wanted,
        "state": "pending",
        "created_ms": now,
        "by": by,
        "updated_ms": now,
        "note": "",
    }
    try:
        path = client.create(
            f"{requests_path(base)}/{PREFIX}",
            json.dumps(doc).encode(),
            sequence=True,
            makepath=True,
        )
    except (KazooException, KazooTimeoutError) as exc:
        raise CoordinationError(f"cannot store the {kind} request in ZooKeeper: {exc!r}") from exc
    request_id = path.rsplit("/", 1)[1]
    return parse_request(request_id, {**doc, "id": request_id}, 0)


def cancel(client: KazooClient, base: str, request_id: str) -> StoredRequest:
    """Mark a request cancelled (compare-and-set); one already over says so and stays."""
    for _ in range(5):
        current = {r.id: r for r in read_requests(client, base)}.get(request_id)
        if current is None:
            raise KmedicError(f"no request {request_id} (see `kmedic requests list`)")
        if not current.open:
            raise KmedicError(
                f"{current.sentence()}; only a pending or running one can be cancelled"
            )
        updated = _with(current, "cancelled", "cancelled by an operator")
        try:
            stat = client.set(
                f"{requests_path(base)}/{request_id}",
                json.dumps(updated.document()).encode(),
                version=current.version,
            )
        except BadVersionError:
            continue  # the leader updated it meanwhile: read again
        except (KazooException, KazooTimeoutError) as exc:
            raise CoordinationError(f"cannot cancel request {request_id}: {exc!r}") from exc
        return _versioned(updated, int(stat.version))
    raise KmedicError(f"request {request_id} kept changing; try again")


class RequestStore:
    """The leader's writes to requests: fenced by its epoch and the request's version."""

    def __init__(self, coordinator: FencedSession, base: str) -> None:
        self._coordinator = coordinator
        self.base = base

    def mark(self, request: StoredRequest, state: RequestState, note: str) -> StoredRequest:
        updated = _with(request, state, note)
        payload = json.dumps(updated.document()).encode()
        path = f"{requests_path(self.base)}/{request.id}"
        results = self._coordinator.fenced_commit(
            lambda tx: tx.set_data(path, payload, version=request.version),
            f"mark request {request.id} {state}",
        )
        if isinstance(results[1], Exception):
            raise KmedicError(f"request {request.id} changed underneath (cancelled meanwhile?)")
        return _versioned(updated, int(results[1].version))


def _with(request: StoredRequest, state: RequestState, note: str) -> StoredRequest:
    return replace(request, state=state, note=note, updated_ms=int(time.time() * 1000))


def _versioned(request: StoredRequest, version: int) -> StoredRequest:
    return replace(request, version=version)
