"""Parsing exporter pages recorded from a real broker (Kafka 4.1, JMX exporter 1.0.1)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from agent.exporter import (
    Counters,
    ExporterParseError,
    ExporterUnreachable,
    PageParser,
    PartitionLog,
    Timer,
    _classify,
    _partition_item,
    fetch_page,
    interval_mean,
    parse_page,
    simple_sample,
)

DATA = Path(__file__).parent / "data"


def page(name: str) -> str:
    return (DATA / name).read_text()


def test_broker_and_topic_counters() -> None:
    s = parse_page(page("exporter_broker1_t0.prom"), taken_at=5.0)
    assert s.taken_at == 5.0
    assert s.broker == Counters(bytes_in=133491.0, bytes_out=0.0, messages_in=350.0)
    assert s.topics["orders"] == Counters(bytes_in=101994.0, bytes_out=0.0, messages_in=200.0)
    assert s.topics["clicks"] == Counters(bytes_in=31497.0, bytes_out=0.0, messages_in=150.0)
    assert set(s.topics) == {"orders", "clicks"}
    assert s.under_replicated == 0


def test_partition_logs_include_every_hosted_replica() -> None:
    s = parse_page(page("exporter_broker1_t1.prom"), taken_at=0.0)
    assert s.partitions[("orders", 0)] == PartitionLog(101994, 0, 200)  # a follower on broker 1
    assert s.partitions[("orders", 1)] == PartitionLog(152994, 0, 300)
    assert s.partitions[("orders", 2)] == PartitionLog(254994, 0, 500)
    assert s.partitions[("clicks", 0)] == PartitionLog(31497, 0, 150)
    assert ("clicks", 1) not in s.partitions  # hosted by broker 2 only


def test_other_broker_page() -> None:
    s = parse_page(page("exporter_broker2_t1.prom"), taken_at=0.0)
    assert ("clicks", 1) in s.partitions
    assert ("clicks", 0) not in s.partitions
    assert s.broker.bytes_in > 0


def test_counter_family_without_total_suffix_and_created_samples() -> None:
    text = (
        "# TYPE kafka_server_brokertopicmetrics_bytesinpersec counter\n"
        "kafka_server_brokertopicmetrics_bytesinpersec_total 10.0\n"
        "kafka_server_brokertopicmetrics_bytesinpersec_created 1700000000.0\n"
        'kafka_server_brokertopicmetrics_bytesinpersec_total{topic="a"} 7.0\n'
    )
    s = parse_page(text, taken_at=0.0)
    assert s.broker.bytes_in == 10.0
    assert s.topics["a"].bytes_in == 7.0


def test_garbage_is_a_parse_error() -> None:
    with pytest.raises(ExporterParseError, match="not valid Prometheus text"):
        parse_page("kafka_server_brokertopicmetrics_bytesinpersec_total{oops 1\n", 0.0)


def test_page_without_kafka_metrics_is_a_parse_error() -> None:
    with pytest.raises(ExporterParseError, match="lacks the broker-wide"):
        parse_page("# TYPE up gauge\nup 1.0\n", 0.0)


def test_unreachable_exporter() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ExporterUnreachable, match=f"127.0.0.1:{port}"):
        fetch_page(f"http://127.0.0.1:{port}/metrics", timeout_s=2.0)


def test_cached_parse_equals_fresh_parse() -> None:
    t0, t1 = page("exporter_broker1_t0.prom"), page("exporter_broker1_t1.prom")
    parser = PageParser()
    assert parser.parse(t0, 1.0) == parse_page(t0, 1.0)
    assert parser.parse(t1, 2.0) == parse_page(t1, 2.0)  # only changed lines re-parsed
    assert parser.parse(t1, 3.0) == parse_page(t1, 3.0)
    assert parser.parse(t0, 4.0) == parse_page(t0, 4.0)


@given(
    sizes=st.lists(st.integers(0, 10**12), min_size=1, max_size=20),
    changes=st.lists(st.tuples(st.integers(0, 19), st.integers(0, 10**12)), max_size=10),
    dropped=st.sets(st.integers(0, 19), max_size=5),
)
def test_cache_never_changes_the_result(
    sizes: list[int], changes: list[tuple[int, int]], dropped: set[int]
) -> None:
    def render(values: dict[int, int]) -> str:
        lines = ["kafka_server_brokertopicmetrics_bytesinpersec_total 1.0"]
        lines += [
            f'kafka_log_log_size{{partition="{p}",topic="t"}} {v}.0' for p, v in values.items()
        ]
        return "\n".join(lines) + "\n"

    first = dict(enumerate(sizes))
    second = {p: v for p, v in first.items() if p not in dropped}
    for p, v in changes:
        if p in second:
            second[p] = v
    parser = PageParser()
    parser.parse(render(first), 0.0)
    assert parser.parse(render(second), 1.0) == parse_page(render(second), 1.0)


def test_a_bad_line_fails_even_after_a_good_page() -> None:
    parser = PageParser()
    good = page("exporter_broker1_t0.prom")
    parser.parse(good, 0.0)
    with pytest.raises(ExporterParseError):
        parser.parse(good + 'kafka_log_log_size{partition="x",topic="t"} 1.0\n', 1.0)


def test_the_broker_s_produce_and_flush_times_give_the_mean_since_the_last_scrape() -> None:
    without = parse_page(page("exporter_broker1_t0.prom"), taken_at=0.0)
    assert without.produce_local is None and without.log_flush is None

    def timed(count: float, mean: float, flushes: float) -> str:
        return page("exporter_broker1_t0.prom") + (
            "# TYPE kafka_network_requestmetrics_localtimems_count gauge\n"
            f'kafka_network_requestmetrics_localtimems_count{{request="Produce",}} {count}\n'
            "# TYPE kafka_network_requestmetrics_localtimems_mean gauge\n"
            f'kafka_network_requestmetrics_localtimems_mean{{request="Produce",}} {mean}\n'
            "# TYPE kafka_log_logflushstats_logflushrateandtimems_count gauge\n"
            f"kafka_log_logflushstats_logflushrateandtimems_count {flushes}\n"
            "# TYPE kafka_log_logflushstats_logflushrateandtimems_mean gauge\n"
            "kafka_log_logflushstats_logflushrateandtimems_mean 3.0\n"
        )

    parser = PageParser()
    first = parser.parse(timed(100, 2.0, 7), 0.0)
    assert first.produce_local == Timer(100, 2.0) and first.log_flush == Timer(7, 3.0)
    # 100 more produces took 2,000 ms between them: a mean of 20 ms, though the lifetime
    # mean is only 11 ms.
    second = parser.parse(timed(200, 11.0, 7), 1.0)
    assert interval_mean(first.produce_local, second.produce_local) == 20.0
    assert interval_mean(first.log_flush, second.log_flush) is None  # no flush in between
    assert interval_mean(None, second.produce_local) is None
    assert interval_mean(second.produce_local, first.produce_local) is None  # a restart


PLAIN_NAMES = st.sampled_from(
    [
        "kafka_log_log_size",
        "kafka_log_log_logendoffset",
        "kafka_server_brokertopicmetrics_bytesinpersec_total",
        "kafka_server_replicamanager_underreplicatedpartitions",
    ]
)
LABEL_VALUES = st.text(
    alphabet=st.characters(blacklist_characters='"\\\n', blacklist_categories=("Cs",)),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(
    name=PLAIN_NAMES,
    labels=st.dictionaries(st.sampled_from(["topic", "partition", "x_y"]), LABEL_VALUES),
    value=st.one_of(st.floats(allow_nan=False), st.integers(-(10**15), 10**15).map(float)),
    trailing_comma=st.booleans(),
)
def test_a_plain_line_reads_as_prometheus_client_reads_it(
    name: str, labels: dict[str, str], value: float, trailing_comma: bool
) -> None:
    pairs = ",".join(f'{k}="{v}"' for k, v in labels.items())
    body = f"{{{pairs}{',' if trailing_comma and pairs else ''}}}" if labels else ""
    line = f"{name}{body} {value!r}"
    ours = simple_sample(line)
    [family] = text_string_to_metric_families(line + "\n")
    [theirs] = family.samples
    # Braces in a label value send the line to prometheus-client; anything else is ours.
    assert ours is not None or any(c in v for v in labels.values() for c in "{}")
    assert ours is None or ours == (theirs.name, theirs.labels, theirs.value)


def test_lines_with_escapes_or_timestamps_go_to_prometheus_client() -> None:
    assert simple_sample('m{topic="a\\"b"} 1') is None
    assert simple_sample("m 1 1700000000000") is None
    assert simple_sample('m{topic="a"}x 1') is None
    text = page("exporter_broker1_t0.prom") + (
        'kafka_log_log_size{topic="we\\"ird",partition="0",} 42.0 1700000000000\n'
    )
    s = PageParser().parse(text, 0.0)
    assert s.partitions[('we"ird', 0)].size == 42


@settings(max_examples=300, deadline=None)
@given(
    family=st.sampled_from(
        [
            "log_log_size",
            "log_log_logendoffset",
            "log_log_logstartoffset",
            "log_log_numlogsegments",
            "cluster_partition_replicascount",
            "cluster_partition_insyncreplicascount",
            "cluster_partition_underreplicated",
            "server_fetcherlagmetrics_consumerlag",
        ]
    ),
    topic=LABEL_VALUES,
    partition=st.integers(0, 10**6),
    leader=st.integers(0, 10**6),
    value=st.integers(0, 10**15).map(float),
    trailing_comma=st.booleans(),
)
def test_a_partition_gauge_line_reads_as_the_general_path_reads_it(
    family: str, topic: str, partition: int, leader: int, value: float, trailing_comma: bool
) -> None:
    comma = "," if trailing_comma else ""
    first = f'leader="{leader}",' if family.endswith("consumerlag") else ""
    line = f'kafka_{family}{{{first}partition="{partition}",topic="{topic}"{comma}}} {value!r}'
    general = simple_sample(line)
    fast = _partition_item(line)
    read = not family.endswith(("numlogsegments", "underreplicated"))
    if fast is not None:
        assert general is not None and fast == _classify(*general)
    else:  # not a gauge kmedic reads, braces in the topic, a trailing comma: the general path
        assert not read or trailing_comma or any(c in topic for c in "{}")
    # The exporter's own form takes the fast path.
    assert (fast is not None) == (read and not trailing_comma and not any(c in topic for c in "{}"))


def test_a_known_series_is_read_again_whatever_its_value_becomes() -> None:
    """A series parsed once is remembered; its next value is still checked, and a line that
    gains a timestamp is read as prometheus-client reads it."""
    line = 'kafka_log_log_size{partition="0",topic="t"} '
    head = "kafka_server_brokertopicmetrics_bytesinpersec_total 1.0\n"
    parser = PageParser()
    parser.parse(head + line + "5.0\n", 0.0)
    with pytest.raises(ExporterParseError):
        parser.parse(head + line + "five\n", 1.0)
    stamped = head + line + "7.0 1700000000000\n"
    assert parser.parse(stamped, 2.0) == parse_page(stamped, 2.0)
    assert parser.parse(stamped, 2.0).partitions[("t", 0)].size == 7


def test_the_series_remembered_follow_the_page_size() -> None:
    """Partitions that leave the broker are forgotten: what the parser remembers stays within
    twice a page's lines, and forgetting never changes a result."""
    head = "kafka_server_brokertopicmetrics_bytesinpersec_total 1.0\n"
    parser = PageParser()
    for step in range(6):
        text = head + "".join(
            f'kafka_log_log_size{{partition="{p}",topic="t{step}"}} {p}.0\n' for p in range(50)
        )
        assert parser.parse(text, float(step)) == parse_page(text, float(step))
        assert len(parser._series) <= 2 * text.count("\n")
