"""Every error the API answers is an RFC 9457 problem (``application/problem+json``): a
title that names the kind of problem and a detail that names this one, with its numbers."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from kmedic.errors import ConfigError, KmedicError, Unreachable
from kmedic.logging import get_logger
from manager.coordination.znodes import CoordinationError

log = get_logger(__name__)

PROBLEM_JSON = "application/problem+json"
ROUTES = "/status, /status.json, /metrics, /healthz, or the API under /api/v1 (its document: "
ROUTES += "/api/v1/openapi.json)"


class ProblemDocument(BaseModel):
    """What every error answers (RFC 9457)."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    instance: str


# The errors a route may answer, for the OpenAPI document: each a problem document.
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {
        "description": HTTPStatus(status).phrase,
        "content": {PROBLEM_JSON: {"schema": ProblemDocument.model_json_schema()}},
    }
    for status in (401, 403, 404, 409, 422, 429, 500, 503)
}


class Problem(Exception):
    """An answer that is not a success: its status and what went wrong."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers or {}


def problem_response(
    request: Request, status: int, detail: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "instance": request.url.path,
    }
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def status_of(exc: KmedicError) -> int:
    """ZooKeeper or Kafka not answering: 503; a refused value: 422; a refused change: 409."""
    if isinstance(exc, Unreachable | CoordinationError):
        return 503
    if isinstance(exc, ConfigError):
        return 422
    return 409


def install(app: FastAPI) -> None:
    async def on_problem(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Problem)
        return problem_response(request, exc.status, exc.detail, exc.headers)

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        headers = dict(exc.headers) if exc.headers else None
        detail = str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"no route {request.url.path}: try {ROUTES}"
        return problem_response(request, exc.status_code, detail, headers)

    async def on_invalid(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return problem_response(request, 422, _validation_detail(exc.errors()))

    async def on_kmedic(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, KmedicError)
        return problem_response(request, status_of(exc), str(exc))

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Anything else (a bug, a library's own error) is still a problem document, never
        # a plain-text 500; the manager's log has the traceback.
        log.error("api_request_failed", path=request.url.path, error=f"{type(exc).__name__}: {exc}")
        detail = f"unexpected {type(exc).__name__}: {exc} (the manager's log has the traceback)"
        return problem_response(request, 500, detail)

    app.add_exception_handler(Exception, on_unexpected)
    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(KmedicError, on_kmedic)


def _validation_detail(errors: Any) -> str:
    """Each problem with the field it is in: ``body.brokers.0: Input should be ...``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in err.get('loc', ())) or '(request)'}: {err.get('msg', '')}"
        for err in errors
    )
