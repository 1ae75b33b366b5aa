"""The audit log over HTTP: a page of records (``since``, ``kind``, ``limit``, and the
``cursor`` the previous page gave) and a streaming follow (one JSON record per line, as
`kmedic actions tail --config manager.yaml --follow --json` prints them), both read from the
audit topic, so any manager answers the same. Records of other clusters sharing the topic are
left out.

A follow starts at the end of the topic unless ``since`` says otherwise (it replayed the whole
topic), and its reads run on a pool of their own, ``http.max_followers`` threads: past that a
follow is refused with 429. They shared the pool that serves ``/healthz`` and ``/metrics``,
so enough idle followers starved the probes and the scrapes."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

import anyio
import anyio.to_thread
from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from kmedic.errors import KmedicError
from manager.api.access import caller
from manager.api.problems import Problem
from manager.api.shapes import AuditPage
from manager.api.view import ManagerView
from manager.audit.kafka_reader import read_records
from manager.audit.log import AuditKind, AuditRecord
from manager.audit.since import parse_since

NDJSON = "application/x-ndjson"
MAX_PAGE = 1000

Since = Annotated[
    str | None,
    Query(description="only records from then on: 15m, 2h, 1d or an ISO time (UTC)"),
]
Kinds = Annotated[list[AuditKind] | None, Query(description="only records of these kinds")]


def _since_ms(since: str | None, now_ms: int) -> int | None:
    if since is None:
        return None
    try:
        return parse_since(since, now_ms, flag="since")
    except KmedicError as exc:
        raise Problem(422, str(exc)) from exc


def router(view: ManagerView, stopping: threading.Event, max_followers: int) -> APIRouter:
    api = APIRouter(prefix="/api/v1", dependencies=[Depends(caller)], tags=["audit"])
    followers = anyio.CapacityLimiter(max_followers)  # the follows' own threads
    following = [0]  # follows open now (the event loop's thread alone counts them)

    def wanted(record: AuditRecord, kinds: list[AuditKind] | None) -> bool:
        return record.cluster == view.cluster and (not kinds or record.kind in kinds)

    @api.get("/audit", response_model=AuditPage, summary="a page of audit records, oldest first")
    def page(
        since: Since = None,
        kind: Kinds = None,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 100,
        cursor: Annotated[
            str | None, Query(description="the previous page's next_cursor: go on after it")
        ] = None,
    ) -> dict[str, Any]:
        """Up to ``limit`` records; ``next_cursor`` is set when more follow (pass it back as
        ``cursor`` to read on), null at the end of the topic."""
        start_ms, after = _cursor(cursor) if cursor else (None, None)
        since_ms = _since_ms(since, _now_ms())
        if start_ms is not None:
            since_ms = start_ms
        found: list[AuditRecord] = []
        more = False
        records = read_records(view.kafka, view.audit_topic, since_ms=since_ms)
        try:
            skipping = after is not None
            for record in records:
                if skipping:
                    skipping = record.id != after
                    continue
                if not wanted(record, kind):
                    continue
                if len(found) == limit:
                    more = True
                    break
                found.append(record)
        finally:
            records.close()
        last = found[-1] if found else None
        return {
            "records": [r.model_dump(mode="json") for r in found],
            "next_cursor": f"{last.time_ms}.{last.id}" if more and last else None,
        }

    @api.get(
        "/audit/follow",
        summary="new audit records as they are written (one JSON record per line)",
        response_class=StreamingResponse,
        responses={200: {"content": {NDJSON: {}}}},
    )
    async def follow(since: Since = None, kind: Kinds = None) -> StreamingResponse:
        """From ``since`` if given, else from now on; 429 while ``http.max_followers`` follows
        are open."""
        now_ms = _now_ms()
        since_ms = _since_ms(since, now_ms)
        if following[0] >= max_followers:
            raise Problem(
                429,
                f"{following[0]} audit follows are open, the most this manager serves "
                f"(http.max_followers {max_followers}): close one, or read pages of "
                "/api/v1/audit",
                {"Retry-After": "10"},
            )
        following[0] += 1  # given back when the body ends (Starlette always starts it)
        start = now_ms if since_ms is None else since_ms
        return StreamingResponse(_lines(start, kind), media_type=NDJSON)

    async def _lines(since_ms: int | None, kinds: list[AuditKind] | None) -> AsyncIterator[str]:
        gone = threading.Event()  # the client left, or the server stops
        records: Iterator[AuditRecord] = read_records(
            view.kafka,
            view.audit_topic,
            since_ms=since_ms,
            follow=True,
            should_stop=lambda: gone.is_set() or stopping.is_set(),
        )
        try:
            while True:
                # The reader returns only with a record or once should_stop: a client that
                # leaves cancels the wait at once (the thread is abandoned, not waited for),
                # ``gone`` is set below, and the thread ends within one poll (half a second).
                # Waited for, it held its thread until the next record: a quiet topic's
                # closed follows were never given back.
                record = await anyio.to_thread.run_sync(
                    next, records, None, limiter=followers, abandon_on_cancel=True
                )
                if record is None:
                    return
                if wanted(record, kinds):
                    yield record.model_dump_json() + "\n"
        finally:
            gone.set()  # the reader's thread ends within one poll and closes its consumer
            following[0] -= 1

    return api


def _cursor(text: str) -> tuple[int, str]:
    """``TIME_MS.ID`` of the last record a page gave."""
    when, _, record_id = text.partition(".")
    if not when.isdigit() or not record_id:
        raise Problem(422, f"cursor {text!r}: pass back a page's next_cursor as it came")
    return int(when), record_id


def _now_ms() -> int:
    return int(time.time() * 1000)
