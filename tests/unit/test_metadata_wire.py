"""kmedic's own Metadata decoder (kmedic.metadata_wire) reads every version as kafka-python's
generated decoder does: the same partitions (topic, index, leader, replicas, ISR, offline), in
the same order, the same brokers, cluster id and controller, whatever mix of partition shapes
breaks its runs; and it refuses bytes that are not an answer, naming why."""

from __future__ import annotations

import io
import struct
import uuid
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from metadata_fixtures import partitions_of

from kmedic.kafka_admin import _TableRequest, metadata_request
from kmedic.metadata_wire import MetadataDecodeError, decode_metadata
from kmedic.partition_table import PartitionTable

TOPIC = MetadataResponse.MetadataResponseTopic
PARTITION = TOPIC.MetadataResponsePartition
BROKER = MetadataResponse.MetadataResponseBroker
VERSIONS = range(MetadataResponse.min_version, MetadataResponse.max_version + 1)

PartitionSpec = tuple[int, int, list[int], list[int], list[int], int]


def encoded(
    topics: list[tuple[str, int, list[PartitionSpec]]],
    brokers: list[tuple[int, str, int, str | None]],
    version: int,
    cluster_id: str | None = "c",
) -> bytes:
    response = MetadataResponse(
        throttle_time_ms=0,
        brokers=[BROKER(node_id=b, host=h, port=p, rack=r) for b, h, p, r in brokers],
        cluster_id=cluster_id,
        controller_id=7,
        topics=[
            TOPIC(
                error_code=error,
                name=name,
                topic_id=uuid.UUID(int=i + 1),
                is_internal=False,
                partitions=[
                    PARTITION(
                        error_code=code,
                        partition_index=number,
                        leader_id=leader,
                        leader_epoch=3,
                        replica_nodes=replicas,
                        isr_nodes=isr,
                        offline_replicas=offline,
                    )
                    for number, leader, replicas, isr, offline, code in parts
                ],
                authorized_operations=None,
            )
            for i, (name, error, parts) in enumerate(topics)
        ],
        authorized_operations=None,
        error_code=0,
    )
    return bytes(response.encode(version=version))


def assert_same_as_kafka_python(data: bytes, version: int) -> None:
    theirs = MetadataResponse.decode(data, version=version)
    ours = decode_metadata(data, version)
    assert ours.table.infos() == partitions_of(theirs), f"Metadata v{version}"
    assert [(b.node_id, b.host, b.port, b.rack) for b in ours.brokers] == [
        (b.node_id, b.host, b.port, getattr(b, "rack", None)) for b in theirs.brokers
    ]
    assert ours.cluster_id == getattr(theirs, "cluster_id", None)
    assert ours.controller_id == getattr(theirs, "controller_id", -1)
    assert ours.topic_errors == {str(t.name): t.error_code for t in theirs.topics if t.error_code}


ids = st.lists(st.integers(0, 2_000_000), min_size=0, max_size=5, unique=True)
# A few shapes repeated: runs of equal shape, broken by others, as in a real answer.
shapes = st.lists(st.tuples(ids, ids, ids), min_size=1, max_size=3)


@st.composite
def answers(draw: Any) -> tuple[list[tuple[str, int, list[PartitionSpec]]], int]:
    version = draw(st.sampled_from(VERSIONS))
    topics = []
    for i in range(draw(st.integers(0, 4))):
        kinds = draw(shapes)
        picks = draw(st.lists(st.integers(0, len(kinds) - 1), max_size=40))
        parts: list[PartitionSpec] = [
            (n, draw(st.integers(-1, 9)), *kinds[k], draw(st.sampled_from([0, 0, 0, 5])))
            for n, k in enumerate(picks)
        ]
        error = draw(st.sampled_from([0, 0, 3]))
        topics.append((f"t{i}-" + draw(st.text("abc._-", max_size=8)), error, parts))
    return topics, version


@settings(max_examples=300, deadline=None)
@given(answers(), st.lists(st.tuples(st.integers(0, 99), st.text(max_size=6)), max_size=4))
def test_every_version_decodes_as_kafka_python_decodes_it(
    answer: tuple[list[tuple[str, int, list[PartitionSpec]]], int],
    nodes: list[tuple[int, str]],
) -> None:
    topics, version = answer
    brokers = [(b, host, 9092 + b, f"/r{b % 3}" if b % 2 else None) for b, host in nodes]
    assert_same_as_kafka_python(encoded(topics, brokers, version), version)


@pytest.mark.parametrize("version", VERSIONS)
def test_long_runs_and_the_partitions_that_break_them(version: int) -> None:
    regular = ([1, 2, 3], [1, 2, 3], [])
    shrunk = ([1, 2, 3], [1, 2], [3])
    parts = [
        (n, 1, *(shrunk if n % 97 == 13 else regular), 0) for n in range(1000)
    ]  # a heal's answer: runs of hundreds, one partition in 97 irregular
    wide = [(n, 5, list(range(200)), list(range(150)), [], 0) for n in range(3)]  # 2-byte counts
    topics = [("big", 0, parts), ("wide", 0, wide), ("empty", 0, [])]
    assert_same_as_kafka_python(encoded(topics, [], version), version)


def test_tagged_fields_on_a_partition_are_skipped() -> None:
    version = 13
    parts: list[PartitionSpec] = [(n, 1, [1, 2], [1, 2], [], 0) for n in range(6)]
    data = encoded([("t", 0, parts)], [], version)
    plain = decode_metadata(data, version).table.infos()
    # Partition 2 as it is on the wire, and again with one tagged field (tag 7, 3 bytes).
    wire = struct.pack(">hiii", 0, 2, 1, 3) + b"\x03" + struct.pack(">2i", 1, 2)
    wire += b"\x03" + struct.pack(">2i", 1, 2) + b"\x01" + b"\x00"
    assert data.count(wire) == 1
    tagged = data.replace(wire, wire[:-1] + b"\x01\x07\x03xyz")
    assert decode_metadata(tagged, version).table.infos() == plain


def test_bytes_that_are_not_an_answer_are_refused_naming_why() -> None:
    data = encoded([("t", 0, [(0, 1, [1, 2], [1], [], 0)])], [(1, "h", 9092, None)], 13)
    with pytest.raises(MetadataDecodeError, match="ends"):
        decode_metadata(data[:-9], 13)
    with pytest.raises(MetadataDecodeError, match="bytes left"):
        decode_metadata(data + b"\x00\x00", 13)
    with pytest.raises(MetadataDecodeError, match="version 14"):
        decode_metadata(data, 14)


def test_the_table_is_frozen_and_its_rows_are_the_records() -> None:
    data = encoded([("t", 0, [(0, 1, [1, 2], [1], [2], 0), (1, -1, [3], [], [], 0)])], [], 13)
    table = decode_metadata(data, 13).table
    assert isinstance(table, PartitionTable) and len(table) == 2
    assert table.row(1) == table.infos()[1] and table.row(1).leader == -1
    assert table.replicas.counts().tolist() == [2, 1]
    assert table.replicas.rows_with({2}).tolist() == [0]
    assert table.replicas.rows_with({1, 3}).tolist() == [0, 1]
    with pytest.raises(ValueError, match="read-only"):
        table.leader[0] = 5
    assert np.array_equal(PartitionTable.of(table.infos()).partition, table.partition)


@pytest.mark.parametrize("topics", [None, [], ["pay", "orders"]])
@pytest.mark.parametrize("version", range(1, MetadataRequest.max_version + 1))
def test_the_request_names_its_topics_at_every_version(
    topics: list[str] | None, version: int
) -> None:
    """The executor names its moves' topics: the request must encode them (it once passed
    bare names, which kafka-python cannot encode past v9) and Kafka reads them back."""
    request = metadata_request(topics)
    request.API_VERSION = version
    request.with_header(correlation_id=1, client_id="t")
    decoded = MetadataRequest.decode(
        bytes(request.encode(header=True)), version=version, header=True
    )
    names = None if decoded.topics is None else [t.name for t in decoded.topics]
    assert names == topics


def test_the_answer_to_kmedics_request_is_decoded_by_kmedic() -> None:
    """kafka-python picks a response's decoder from the request in flight: ours names
    decode_metadata, and only for this request (the client's own Metadata is untouched)."""
    request = _TableRequest(metadata_request(["t"]))
    request.API_VERSION = 13
    request.with_header(correlation_id=1, client_id="t")
    answer = request.header.get_response_class()
    data = encoded([("t", 0, [(0, 1, [1, 2], [1, 2], [], 0)])], [], 13)
    raw = answer.decode(io.BytesIO(data))  # in the I/O loop: the bytes only
    table = decode_metadata(raw.data, raw.version).table
    assert isinstance(table, PartitionTable) and table.row(0).replicas == (1, 2)
    plain = metadata_request(["t"])
    plain.API_VERSION = 13
    plain.with_header(correlation_id=2, client_id="t")
    assert plain.header.get_response_class() is MetadataResponse[13]


def test_the_answer_is_decoded_in_the_callers_thread_not_kafka_pythons_io_loop() -> None:
    """At 433,000 partitions the decode held kafka-python's I/O loop for 0.25 s (8 s on a
    busy machine, bench_fleet_manager): logged as a warning every cycle, and every other
    request on that loop timed out behind it. The loop hands over the bytes; the caller's
    thread decodes them. A client whose loop runs in a thread of its own, as kafka-python's
    does, shows where each step ran."""
    import threading

    from kmedic import kafka_admin

    data = encoded([("t", 0, [(0, 1, [1, 2], [1, 2], [], 0)])], [], 13)
    decoded_in: list[str] = []
    real = kafka_admin.decode_metadata

    def watched(body: bytes, version: int) -> Any:
        decoded_in.append(threading.current_thread().name)
        return real(body, version)

    class Manager:
        async def send(self, request: Any) -> Any:
            request.API_VERSION = 13
            request.with_header(correlation_id=1, client_id="t")
            return request.header.get_response_class().decode(io.BytesIO(data))

        def run(self, make: Any) -> Any:
            import asyncio

            out: list[Any] = []
            loop = threading.Thread(target=lambda: out.append(asyncio.run(make())), name="io")
            loop.start()
            loop.join(10)
            return out[0]

    class Client:
        _manager = Manager()

    kafka_admin.decode_metadata = watched  # type: ignore[assignment]
    try:
        table = kafka_admin.describe_partitions(Client(), ["t"])
    finally:
        kafka_admin.decode_metadata = real
    assert table.row(0).replicas == (1, 2)
    assert decoded_in == [threading.current_thread().name] and "io" not in decoded_in
