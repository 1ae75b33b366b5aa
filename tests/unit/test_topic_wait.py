"""New topics are waited for until every broker knows them (kmedic.topic_wait)."""

from __future__ import annotations

import pytest

from kmedic.errors import KmedicError
from kmedic.topic_wait import wait_until_known


def test_returns_once_every_broker_knows_every_topic() -> None:
    asked: list[tuple[str, str]] = []
    lagging = {("b2:9092", "loads"): 3}  # b2 learns of the topic on the third question

    def known_to(broker: str, topic: str) -> str | None:
        asked.append((broker, topic))
        left = lagging.get((broker, topic), 0)
        if left > 1:
            lagging[(broker, topic)] = left - 1
            return "unknown topic"
        return None

    wait_until_known(["loads", "dlq"], ["b1:9092", "b2:9092"], known_to=known_to)
    assert asked.count(("b2:9092", "loads")) == 3
    assert asked.count(("b1:9092", "loads")) == 1  # once known, not asked again


def test_gives_up_naming_the_broker_and_topic_that_never_knew() -> None:
    def known_to(broker: str, topic: str) -> str | None:
        return "no leader yet for partitions [0]" if broker == "b3:9092" else None

    with pytest.raises(KmedicError, match=r"loads on b3:9092: no leader yet for partitions \[0\]"):
        wait_until_known(["loads"], ["b1:9092", "b3:9092"], timeout_s=0.3, known_to=known_to)
