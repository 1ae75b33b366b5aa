"""The exporter's fast line parser agrees with prometheus-client on every line it accepts,
and declines every line prometheus-client rejects."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from agent.promtext import Sample, parse_plain_line


def general(line: str) -> Sample | None:
    """What prometheus-client makes of one sample line (None: rejected)."""
    try:
        samples = [s for f in text_string_to_metric_families(line + "\n") for s in f.samples]
    except Exception:  # the general parser raises several types for bad lines
        return None
    if len(samples) != 1:
        return None
    s = samples[0]
    return s.name, dict(s.labels), float(s.value)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            'kafka_log_log_size{partition="3",topic="orders"} 1.2345678E7',
            ("kafka_log_log_size", {"partition": "3", "topic": "orders"}, 12345678.0),
        ),
        (
            "kafka_server_brokertopicmetrics_bytesinpersec_total 42.0",
            ("kafka_server_brokertopicmetrics_bytesinpersec_total", {}, 42.0),
        ),
        ('m{a="x,y={}"} -1', ("m", {"a": "x,y={}"}, -1.0)),
        ('m{a="1",} 2', ("m", {"a": "1"}, 2.0)),
        ("m{} 3", ("m", {}, 3.0)),
    ],
)
def test_plain_lines(line: str, expected: Sample) -> None:
    assert parse_plain_line(line) == expected
    assert general(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        'm{a="say \\"hi\\""} 1',  # escaped quote
        'm{a="x\\\\y"} 1',  # escaped backslash
        "m NaN",
        "m +Inf",
        "m 1 1700000000000",  # with a timestamp
        'm{a="1", b="2"} 1',  # a space inside the braces
        'm{a="1",a="2"} 1',  # a duplicate label
        'm{__name__="x"} 1',  # a reserved label name
        "m  1",  # two spaces
        "m 1 ",  # trailing space
        "m{a=1} 1",  # unquoted label value
        "9m 1",  # not a metric name
    ],
)
def test_other_lines_go_to_the_general_parser(line: str) -> None:
    assert parse_plain_line(line) is None


# Mostly well-formed parts, so that many lines take the fast path; some of every kind of flaw.
NAMES = st.sampled_from(["m", "kafka_log_log_size", "a:b_total", "_x"] * 4 + ["9bad", "m-x", ""])
KEYS = st.sampled_from(["topic", "partition", "a", "_b"] * 4 + ["__name__", "9k", "k-y", ""])
VALUE_TEXT = st.one_of(
    st.text(alphabet="ab,={} \t€", max_size=6), st.text(alphabet='ab,={} "\\\t€', max_size=6)
)
NUMBERS = st.one_of(
    st.sampled_from(
        ["1", "1.5", "-2e3", ".5", "5.", "+7", "1E+2", "+Inf", "-Inf", "NaN", "0x10", "1_0", "e3"]
    ),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers().map(str),
)


@st.composite
def sample_lines(draw: st.DrawFn) -> str:
    name = draw(NAMES)
    pairs = draw(st.lists(st.tuples(KEYS, VALUE_TEXT), max_size=3))
    quote = draw(st.sampled_from(['"'] * 6 + ["'", ""]))
    sep = draw(st.sampled_from([","] * 6 + [", ", ""]))
    body = sep.join(f"{k}={quote}{v}{quote}" for k, v in pairs)
    if pairs and draw(st.booleans()):
        body += ","
    braces = f"{{{body}}}" if pairs or draw(st.booleans()) else ""
    gap = draw(st.sampled_from([" "] * 6 + ["  ", "\t", ""]))
    tail = draw(st.sampled_from([""] * 6 + [" 1700000000000", " ", " x"]))
    return f"{name}{braces}{gap}{draw(NUMBERS)}{tail}"


@settings(max_examples=3000, deadline=None)
@given(sample_lines())
def test_fast_path_agrees_with_prometheus_client(line: str) -> None:
    fast = parse_plain_line(line)
    if fast is not None:
        assert general(line) == fast, line
