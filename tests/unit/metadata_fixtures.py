"""Kafka's Metadata answer as the client receives it, for the parsing tests."""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import MetadataResponse

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
