"""bench_heal's replica sizes (bench/bench_heal.py, ``Race.replica_sizes``): a broker the
admin client does not know yet (restarted by the last run's put-back) is asked again once the
client's metadata is refreshed, not a crashed benchmark."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.errors import UnknownBrokerIdError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import bench_heal


class Cluster:
    def __init__(self) -> None:
        self.updates = 0

    def request_update(self) -> None:
        self.updates += 1


def test_a_broker_unknown_to_the_admin_client_is_read_again_after_a_metadata_refresh(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = Cluster()
    kadmin = SimpleNamespace(_manager=SimpleNamespace(cluster=cluster))
    answers: list[Any] = [UnknownBrokerIdError(6), UnknownBrokerIdError(6), {}]

    def describe(client: Any, broker: int) -> dict[tuple[str, int], int]:
        assert client is kadmin and broker == 6
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]

    monkeypatch.setattr(bench_heal, "describe_replica_sizes", describe)
    monkeypatch.setattr(bench_heal.time, "sleep", lambda s: None)
    race = SimpleNamespace(kadmin=kadmin)
    # A broker holding no replica answers {}: that is an answer, not a reason to ask again.
    assert bench_heal.Race.replica_sizes(race, 6) == {}  # type: ignore[arg-type]
    assert answers == [] and cluster.updates == 2
