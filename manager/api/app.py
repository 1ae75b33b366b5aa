"""The manager's one HTTP application: the API under ``/api/v1`` (its OpenAPI document at
``/api/v1/openapi.json``), the status page, ``/metrics`` and ``/healthz``; every route behind
the web config's basic authentication, every error a problem document."""

from __future__ import annotations

import threading
from typing import Any

from fastapi import Depends, FastAPI

from kmedic.web_config import WebConfig
from manager.api import audit_feed, pages, placement, problems, reads, recoveries, writes
from manager.api.access import Access, caller
from manager.api.view import ManagerView

OPENAPI_PATH = "/api/v1/openapi.json"
API_VERSION = "1"


def build_app(
    view: ManagerView, web: WebConfig, stopping: threading.Event, max_followers: int = 8
) -> FastAPI:
    """``stopping`` ends the streaming follows when the server stops; ``max_followers``
    bounds them (manager.api.audit_feed)."""
    app = FastAPI(
        title="kmedic manager API",
        version=API_VERSION,
        description="Read what kmedic sees and decides; write operator requests, the mode, "
        "the goal switches and the placement configuration (docs/api.md).",
        openapi_url=None,  # served below, behind the same authentication as the rest
        docs_url=None,  # the interactive page loads its scripts from the internet
        redoc_url=None,
        responses=problems.ERRORS,
    )
    app.state.access = Access(web)
    problems.install(app)
    app.include_router(pages.router(view))
    app.include_router(reads.router(view))
    app.include_router(writes.router(view))
    app.include_router(placement.router(view))
    app.include_router(recoveries.router(view))
    app.include_router(audit_feed.router(view, stopping, max_followers))

    @app.get(OPENAPI_PATH, include_in_schema=False, dependencies=[Depends(caller)])
    def openapi() -> dict[str, Any]:
        return app.openapi()

    return app
