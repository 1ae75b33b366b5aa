"""Skips for a tool the bootstrap installs (promtool, Prometheus, Chromium, podman, the Spark
Kafka connector) say so with one prefix, and fail instead of skipping when
``KMEDIC_REQUIRE_TOOLS=1`` (.ci/run sets it): a failed install must not pass as a green run.
The conftest hook turns such a skip into a failure; a skip for any other reason stays one."""

from __future__ import annotations

import os

import pytest

PREFIX = "missing tool: "
REQUIRED = os.environ.get("KMEDIC_REQUIRE_TOOLS") == "1"


def missing(what: str) -> str:
    """The skip reason for a missing tool: ``what`` says which, and how it is installed."""
    return PREFIX + what


def skip_missing(what: str) -> None:
    pytest.skip(missing(what))


def needs(absent: bool, what: str) -> pytest.MarkDecorator:
    """``skipif`` for a missing tool."""
    return pytest.mark.skipif(absent, reason=missing(what))


def must_fail(report: pytest.TestReport, required: bool = REQUIRED) -> str | None:
    """The failure text when ``report`` is a tool-missing skip under KMEDIC_REQUIRE_TOOLS."""
    if not (required and report.skipped and isinstance(report.longrepr, tuple)):
        return None
    reason = str(report.longrepr[2]).removeprefix("Skipped: ")
    if not reason.startswith(PREFIX):
        return None
    return f"{reason} (KMEDIC_REQUIRE_TOOLS=1: every tool the bootstrap installs is required)"
