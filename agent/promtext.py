"""A fast path for the plain sample lines the JMX exporter writes.

``name{label="value",...} number`` — no escapes in label values, no spaces inside the braces,
no timestamp — is by far the commonest line on an exporter page, and prometheus-client's
general parser spends most of a cold scrape on it. Lines of that shape are parsed here with
two regular expressions; anything else returns None and goes to prometheus-client, so the
result is always what prometheus-client would say (property-tested in
tests/unit/test_agent_promtext.py).
"""

from __future__ import annotations

import re

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_PAIR = r'[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*"'
# A plain decimal or exponent number; Inf, NaN and hex go to the general parser.
_NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_LINE = re.compile(rf"({_NAME})(?:\{{((?:{_PAIR}(?:,{_PAIR})*,?)?)\}})? ({_NUMBER})")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"\\\n]*)"')

Sample = tuple[str, dict[str, str], float]


def parse_plain_line(line: str) -> Sample | None:
    """(name, labels, value) of a plain sample line, or None for any other line."""
    match = _LINE.fullmatch(line)
    if match is None:
        return None
    name, body, value = match.groups()
    labels: dict[str, str] = {}
    if body:
        for key, text in _LABEL.findall(body):
            if key in labels or key.startswith("__"):
                return None  # duplicates and reserved names: the general parser decides
            labels[key] = text
    return name, labels, float(value)
