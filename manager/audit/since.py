"""When to read the audit log from: a duration back from now, or a point in time."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from kmedic.errors import UsageError

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now_ms: int, flag: str = "--since") -> int:
    """``15m``/``2h``/``1d`` ago, or an ISO 8601 time (UTC unless it says otherwise); ``flag``
    is what the error calls the value (the CLI's flag, the API's query parameter)."""
    match = _DURATION.match(text.strip())
    if match:
        return now_ms - int(match.group(1)) * _UNIT_S[match.group(2)] * 1000
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{flag} {text!r}: use a duration like 15m, 2h, 1d or an ISO time like "
            "2026-01-31T12:00:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)
