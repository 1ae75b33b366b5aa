"""The fake Admin port's per-request Metadata builder (bench/metadata_build.py) writes the same
bytes as kafka-python's classes for the same answer, at every version it builds, for the whole
cluster and for the topics asked; and the manager's own decoder reads the leader epochs it was
given."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from fake_admin_port import Answers, partition_columns
from fleet import fleet
from metadata_build import FIRST_VERSION, LAST_VERSION, BrokerEntry, metadata_body

from kmedic.metadata_wire import decode_metadata

FLEET = fleet(0.003)  # a dead broker: shrunk ISRs among the full ones


@pytest.mark.parametrize("version", range(FIRST_VERSION, LAST_VERSION + 1))
@pytest.mark.parametrize("asked", [None, "some", frozenset()])
def test_the_built_answer_is_kafka_pythons_byte_for_byte(version: int, asked: object) -> None:
    topics = sorted({p.topic for p in FLEET.parts})
    wanted = frozenset(topics[1::3]) if asked == "some" else asked
    assert wanted is None or isinstance(wanted, frozenset)
    answers = Answers(FLEET, 9092)
    theirs = bytes(answers.metadata(wanted).encode(version=version))
    brokers = [BrokerEntry(b, "127.0.0.1", 9092, FLEET.rack[b]) for b in FLEET.live]
    columns = partition_columns(FLEET)
    ones = np.ones(len(columns), dtype=np.int32)
    mine = metadata_body(version, brokers, "bench", FLEET.live[0], columns, ones, wanted)
    assert mine == theirs


def test_the_manager_reads_the_built_answer_as_the_fleet_is() -> None:
    """With leader epochs changing from one request to the next (as the port serves them)."""
    columns = partition_columns(FLEET)
    epochs = np.arange(len(columns), dtype=np.int32) * 7
    brokers = [BrokerEntry(b, "h", 1, FLEET.rack[b]) for b in FLEET.live]
    body = metadata_body(13, brokers, "bench", FLEET.live[0], columns, epochs, None)
    table = decode_metadata(body, 13).table
    rows = sorted(
        (table.names[t], p, leader, tuple(isr))
        for t, p, leader, isr in zip(
            table.topic.tolist(),
            table.partition.tolist(),
            table.leader.tolist(),
            table.isr.rows(),
            strict=True,
        )
    )
    assert rows == sorted((p.topic, p.number, p.leader, p.isr) for p in FLEET.parts)
