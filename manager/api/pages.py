"""The routes that were the manager's before the API: ``/metrics`` (Prometheus text),
``/healthz`` (200 or 503 with JSON), ``/status`` (the HTML page) and ``/status.json``."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from manager.api.access import caller
from manager.api.problems import Problem
from manager.api.view import ManagerView
from manager.web.status_page import render_html


def router(view: ManagerView) -> APIRouter:
    api = APIRouter(dependencies=[Depends(caller)], tags=["pages"])

    @api.get("/metrics", response_class=Response, summary="Prometheus metrics")
    def metrics() -> Response:
        return Response(generate_latest(view.registry), media_type=CONTENT_TYPE_LATEST)

    @api.get("/healthz", summary="200 while this instance is healthy, else 503")
    def healthz() -> JSONResponse:
        try:
            ok, details = view.health()
        except Exception as exc:  # a broken check is itself unhealthy
            ok, details = False, {"error": repr(exc)}
        return JSONResponse({"healthy": ok, **details}, status_code=200 if ok else 503)

    @api.get("/status", response_class=HTMLResponse, summary="the status page")
    def status_html() -> HTMLResponse:
        return HTMLResponse(render_html(_status(view)))

    @api.get("/status.json", summary="the status page's content")
    def status_json() -> JSONResponse:
        return JSONResponse(_status(view))

    return api


def _status(view: ManagerView) -> dict[str, object]:
    try:
        return view.status_page()
    except Exception as exc:  # the page must not take the server down
        raise Problem(500, f"status unavailable: {exc!r}") from exc
