"""Local partitions' roles from the broker's own gauges (pages recorded from Kafka 4.1 with
configs/jmx-exporter.yaml), the Metadata fallback, and the cross-check between the two."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.exporter import PartitionGauges, parse_page
from agent.roles import LocalPartition, cross_check, from_gauges, from_metadata
from kmedic.metadata import PartitionInfo

DATA = Path(__file__).parent / "data"
# The cluster the pages were recorded from: 3 brokers, topic "roles" at RF 3.
ROLES_TOPIC = [
    PartitionInfo("roles", 0, 2, (2, 3, 1), (2, 3, 1)),
    PartitionInfo("roles", 1, 1, (1, 2, 3), (1, 2, 3)),
    PartitionInfo("roles", 2, 2, (2, 3, 1), (2, 3, 1)),
    PartitionInfo("roles", 3, 2, (2, 1, 3), (2, 1, 3)),
]


def gauges_of(name: str) -> PartitionGauges | None:
    return parse_page((DATA / name).read_text(), 0.0).gauges


def test_a_recorded_page_gives_the_roles_the_metadata_gives() -> None:
    gauges = gauges_of("exporter_roles_broker1.prom")
    assert gauges is not None
    assert gauges.leading == {("roles", 1): (3, 3)}
    assert gauges.following == {("roles", 0): 2, ("roles", 2): 2, ("roles", 3): 2}
    by_key = {(p.topic, p.partition): p for p in ROLES_TOPIC}
    assert from_gauges(gauges, 1, by_key) == from_metadata(ROLES_TOPIC, 1)
    assert cross_check(from_gauges(gauges, 1, by_key), from_metadata(ROLES_TOPIC, 1)).agrees


def test_an_under_replicated_leader_shows_in_its_gauges() -> None:
    """Recorded after broker 3 was killed: roles-1 led by broker 1 with 2 in sync of 3."""
    gauges = gauges_of("exporter_roles_broker1_urp.prom")
    assert gauges is not None and gauges.leading == {("roles", 1): (3, 2)}
    [led] = [p for p in from_gauges(gauges, 1, {}) if p.leader == 1]
    assert led.under_replicated


def test_a_page_without_partition_gauges_gives_no_roles() -> None:
    """Recorded with an exporter configuration that lacks them: the roles must come from the
    cluster's metadata."""
    assert gauges_of("exporter_broker1_t0.prom") is None


def _without_partitions(page: str) -> str:
    """The page of the same broker holding no partition: only the logs of KRaft's metadata
    and of partitions it no longer holds (stray logs: a move to it cancelled while it was
    down), which have no partition gauges."""
    lines = []
    for line in page.splitlines():
        if line.startswith("kafka_server_replicamanager_partitioncount "):
            line = "kafka_server_replicamanager_partitioncount 0.0"
        elif 'topic="roles"' in line and not line.startswith("kafka_log_log_"):
            continue
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_a_broker_without_partitions_has_empty_roles_whatever_logs_it_keeps() -> None:
    page = _without_partitions((DATA / "exporter_roles_broker1.prom").read_text())
    assert 'kafka_log_log_size{partition="0",topic="roles"}' in page
    assert parse_page(page, 0.0).gauges == PartitionGauges({}, {})
    # Without the broker's own count, its logs say whether it holds partitions.
    uncounted = "\n".join(
        line
        for line in page.splitlines()
        if "kafka_server_replicamanager_partitioncount" not in line and 'topic="roles"' not in line
    )
    assert parse_page(uncounted + "\n", 0.0).gauges == PartitionGauges({}, {})


def test_a_follower_the_last_metadata_read_did_not_show_is_not_in_the_isr() -> None:
    gauges = PartitionGauges({}, {("new", 0): 2})
    assert from_gauges(gauges, 1, {}) == [LocalPartition("new", 0, 2, False, False)]


def test_a_follower_without_a_fetch_gauge_has_the_metadata_reads_leader_but_never_itself() -> None:
    """A follower in sync may have no fetch-lag gauge (seen on Kafka 4.1.1 after its
    partition's leadership moved between two brokers): its leader is the last Metadata read's,
    unless that read still named this broker (it lost the leadership since), then none."""
    gauges = PartitionGauges({}, {("roles", 0): -1, ("roles", 1): -1, ("new", 0): -1})
    read = {
        ("roles", 0): ROLES_TOPIC[0],  # led by 2
        ("roles", 1): ROLES_TOPIC[1],  # led by 1: this broker, as that read saw it
    }
    assert from_gauges(gauges, 1, read) == [
        LocalPartition("new", 0, -1, False, False),
        LocalPartition("roles", 0, 2, False, True),
        LocalPartition("roles", 1, -1, False, True),
    ]


BROKERS = st.integers(1, 6)


@st.composite
def partitions(draw: st.DrawFn) -> list[PartitionInfo]:
    found = []
    for number in range(draw(st.integers(0, 12))):
        replicas = tuple(draw(st.lists(BROKERS, min_size=1, max_size=4, unique=True)))
        isr = tuple(b for b in replicas if draw(st.booleans())) or replicas[:1]
        found.append(PartitionInfo(f"t{number % 3}", number, isr[0], replicas, isr))
    return found


def gauges_from(parts: list[PartitionInfo], broker: int) -> PartitionGauges:
    """What a broker's gauges say of a consistent cluster."""
    mine = [p for p in parts if broker in p.replicas]
    return PartitionGauges(
        {(p.topic, p.partition): (len(p.replicas), len(p.isr)) for p in mine if p.leader == broker},
        {(p.topic, p.partition): p.leader for p in mine if p.leader != broker},
    )


@settings(max_examples=200, deadline=None)
@given(parts=partitions(), broker=BROKERS, data=st.data())
def test_gauges_of_a_consistent_cluster_agree_with_its_metadata(
    parts: list[PartitionInfo], broker: int, data: st.DataObject
) -> None:
    known = {(p.topic, p.partition): p for p in parts}
    gauged = from_gauges(gauges_from(parts, broker), broker, known)
    read = from_metadata(parts, broker)
    assert gauged == read
    assert cross_check(gauged, read).agrees
    # A leader that moved between the scrape and the read: that partition, and only it, differs.
    followed = [p for p in gauged if p.leader != broker]
    if followed:
        moved = data.draw(st.sampled_from(followed))
        changed = [
            LocalPartition(p.topic, p.partition, 99, False, p.in_isr) if p == moved else p
            for p in gauged
        ]
        assert cross_check(changed, read).differ == ((moved.topic, moved.partition),)
    # A partition one source holds and the other does not differs too.
    assert cross_check(gauged[1:], read).differ == tuple((p.topic, p.partition) for p in gauged[:1])
