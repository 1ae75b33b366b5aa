"""Secrets kept out of every log line: the values kmedic resolves (Kafka and ZooKeeper
passwords, key passwords) are registered here when read, and the log pipeline replaces each
occurrence with ``***`` in every field, exception text included, before anything is written.

A value shorter than ``MIN_LENGTH`` is not registered (replacing a two-letter string everywhere
would garble the logs, and such a password protects nothing); docs/security.md says so.
"""

from __future__ import annotations

import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from kmedic.errors import ConfigError

MIN_LENGTH = 4
MASK = "***"

_known: set[str] = set()
_lock = threading.Lock()


def register(*values: str) -> None:
    """Remember secret values so that no log line shows them."""
    with _lock:
        _known.update(v for v in values if len(v) >= MIN_LENGTH)


def resolve(inline: SecretStr | None, file: Path | None, setting: str) -> str:
    """A password given inline, else the first line of ``file`` (read now, so a rotated file
    is picked up), registered for redaction; "" when neither is given. ``setting`` names the
    config key in errors (``kafka.password_file``)."""
    if inline is not None:
        register(inline.get_secret_value())
        return inline.get_secret_value()
    if file is None:
        return ""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"{setting}: {file}: cannot read it ({exc.strerror})") from exc
    if not lines or not lines[0]:
        raise ConfigError(f"{setting}: {file} is empty")
    register(lines[0])
    return lines[0]


def redact(text: str) -> str:
    with _lock:
        known = sorted(_known, key=len, reverse=True)  # a secret inside a longer one
    for secret in known:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_scrub(v) for v in value)
    return value


def redact_event(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> Any:
    """A structlog processor: every string in the event, nested ones too, redacted."""
    if not _known:
        return event
    return {k: _scrub(v) for k, v in event.items()}
