"""Small helpers for tests (importable as ``helpers`` from any test module)."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_for(
    check: Callable[[], T], *, timeout: float, interval: float = 0.5, what: str = "condition"
) -> T:
    """Poll ``check()`` until it returns a truthy value; fail the test naming ``what``."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last value: {last!r})")


def http_get(url: str) -> tuple[int, str, str]:
    """(status, content type, body) of a GET, error statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read().decode()
