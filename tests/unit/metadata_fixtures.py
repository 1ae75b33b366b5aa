"""Kafka's Metadata answer as the client receives it, for the parsing tests."""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import MetadataResponse

from kmedic.metadata import PartitionInfo

TOPIC = MetadataResponse.MetadataResponseTopic
PARTITION = TOPIC.MetadataResponsePartition


def wire(
    topics: dict[str, list[tuple[int, int, list[int], list[int], list[int]]]], version: int
) -> Any:
    """The response encoded at ``version`` and decoded again, as the client receives it."""
    response = MetadataResponse(
        throttle_time_ms=0,
        brokers=[],
        cluster_id="c",
        controller_id=1,
        topics=[
            TOPIC(
                error_code=0,
                name=name,
                is_internal=False,
                partitions=[
                    PARTITION(
                        error_code=0,
                        partition_index=number,
                        leader_id=leader,
                        leader_epoch=1,
                        replica_nodes=replicas,
                        isr_nodes=isr,
                        offline_replicas=offline,
                    )
                    for number, leader, replicas, isr, offline in parts
                ],
            )
            for name, parts in topics.items()
        ],
    )
    return MetadataResponse.decode(bytes(response.encode(version=version)), version=version)


def partitions_of(response: Any) -> list[PartitionInfo]:
    """The partitions of a Metadata response, read from kafka-python's decoded object (not
    from the dicts its ``describe_topics`` would make of it: kmedic.kafka_admin)."""
    out: list[PartitionInfo] = []
    add = out.append
    for t in response.topics:
        name = str(t.name)
        for p in t.partitions:
            offline = getattr(p, "offline_replicas", None)
            add(
                PartitionInfo(
                    name,
                    int(p.partition_index),
                    int(p.leader_id),
                    tuple(map(int, p.replica_nodes)),
                    tuple(map(int, p.isr_nodes)),
                    tuple(map(int, offline)) if offline else (),
                )
            )
    return out
