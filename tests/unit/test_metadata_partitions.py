"""The cluster's partitions parsed from Kafka's Metadata answer as it comes off the wire
(kafka-python's decoded objects, kmedic.metadata.partitions_of), at every version: the
replicas, the ISR, the leader (-1: none) and, from v5 on, the offline replicas."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.metadata import MetadataResponse
from metadata_fixtures import partitions_of, wire

from kmedic.metadata import PartitionInfo

OFFLINE_SINCE = 5  # the first Metadata version with offline replicas


def test_every_version_gives_the_same_records_and_offline_replicas_from_v5() -> None:
    topics = {"pay": [(0, 2, [1, 2, 3], [2, 3], [1]), (1, -1, [4], [], [])]}
    for version in range(MetadataResponse.min_version, MetadataResponse.max_version + 1):
        offline = (1,) if version >= OFFLINE_SINCE else ()
        assert partitions_of(wire(topics, version)) == [
            PartitionInfo("pay", 0, 2, (1, 2, 3), (2, 3), offline),
            PartitionInfo("pay", 1, -1, (4,), (), ()),
        ], f"Metadata v{version}"


brokers = st.lists(st.integers(0, 300), min_size=1, max_size=5, unique=True)
partition = st.tuples(st.integers(0, 10_000), st.integers(-1, 300), brokers, brokers, brokers)
clusters = st.dictionaries(
    st.text("abcdefgh.-_", min_size=1, max_size=12), st.lists(partition, max_size=6), max_size=5
)


@given(clusters)
def test_what_kafka_says_is_what_the_records_hold(topics: dict[str, Any]) -> None:
    version = MetadataResponse.max_version
    assert partitions_of(wire(topics, version)) == [
        PartitionInfo(name, n, leader, tuple(r), tuple(i), tuple(o))
        for name, parts in topics.items()
        for n, leader, r, i, o in parts
    ]
