"""Logging follows the current stderr, and events are key-value or JSON as configured."""

from __future__ import annotations

import io
import json
import logging

import pytest

from kmedic.logging import get_logger, setup_logging


@pytest.fixture(autouse=True)
def _restore_root_logging() -> object:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield None
    root.handlers[:] = handlers
    root.setLevel(level)


def test_records_go_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    setup_logging("INFO", json=True)
    first = io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    get_logger("kmedic.test").info("first_event", n=1)
    first.close()  # as a finished test's captured stream would be
    second = io.StringIO()
    monkeypatch.setattr("sys.stderr", second)
    get_logger("kmedic.test").info("second_event", n=2)
    event = json.loads(second.getvalue().strip().splitlines()[-1])
    assert event["event"] == "second_event"
    assert event["n"] == 2
    assert event["logger"] == "kmedic.test"


def test_key_value_lines_when_not_json(monkeypatch: pytest.MonkeyPatch) -> None:
    setup_logging("INFO", json=False)
    out = io.StringIO()
    monkeypatch.setattr("sys.stderr", out)
    logging.getLogger("some.library").warning("disk %s is slow", "sda")
    get_logger("kmedic.test").debug("hidden_below_info")
    text = out.getvalue()
    assert "disk sda is slow" in text
    assert "hidden_below_info" not in text
