"""Unsafe topics (pure): RF below the minimum, min.insync.replicas that blocks writes at the
first replica out of sync, or that loses acknowledged writes; each kind found exactly when its
rule holds, and exported as gauges by the manager."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from manager_fakes import Rig
from planner_fixtures import snapshot_dict

from kmedic.own_topics import OwnTopics, own_min_insync, own_replication
from manager.analyzer.topic_safety import (
    TopicFacts,
    UnsafeTopic,
    facts,
    find_unsafe,
    unsafe_topics,
)
from manager.model.snapshot_file import parse_snapshot
from manager.monitor.topic_configs import topic_configs


def test_each_kind_with_its_sentence() -> None:
    found = find_unsafe(
        [
            TopicFacts("single", 1, 1),
            TopicFacts("strict", 3, 3),
            TopicFacts("loose", 3, 1),
            TopicFacts("pay", 3, 2),
            TopicFacts("pair", 2, None),  # setting not read: RF only
        ],
        min_rf=2,
    )
    assert [(u.topic, u.kind) for u in found] == [
        ("loose", "min_isr_loses_writes"),
        ("single", "below_min_rf"),
        ("strict", "min_isr_blocks_writes"),
    ]
    assert [u.sentence(2) for u in found] == [
        "loose: min.insync.replicas 1 at RF 3: an acks=all write acknowledged by the leader "
        "alone is lost with it",
        "single: RF 1 is below the minimum 2",
        "strict: min.insync.replicas 3 at RF 3: one replica out of sync blocks every acks=all "
        "write",
    ]


@given(st.integers(1, 6), st.none() | st.integers(1, 6), st.integers(1, 5))
def test_a_kind_is_found_exactly_when_its_rule_holds(
    rf: int, min_isr: int | None, min_rf: int
) -> None:
    kinds = {u.kind for u in find_unsafe([TopicFacts("t", rf, min_isr)], min_rf)}
    assert ("below_min_rf" in kinds) == (rf < min_rf)
    assert ("min_isr_blocks_writes" in kinds) == (min_isr is not None and rf >= 2 and min_isr >= rf)
    assert ("min_isr_loses_writes" in kinds) == (min_isr == 1 and rf >= 3)


def test_a_topics_rf_is_its_smallest_partition_without_replicas_being_added() -> None:
    def part(n: int, replicas: list[int]) -> dict[str, Any]:
        return {
            "partition": n,
            "replicas": replicas,
            "isr": replicas,
            "leader": replicas[0],
            "size_bytes": 0,
        }

    data = snapshot_dict(
        [{"id": b, "alive": True} for b in (1, 2, 3, 4)],
        {"t": [part(0, [1, 2, 3]), part(1, [1, 2, 3, 4])], "moving": [part(0, [1, 2, 4])]},
        reassignments=[
            {"topic": "moving", "partition": 0, "adding_replicas": [4], "started_by_kmedic": True}
        ],
    )
    data["topics"][0]["min_insync_replicas"] = 2
    snap = parse_snapshot(json.dumps(data))
    assert facts(snap) == [TopicFacts("t", 3, 2), TopicFacts("moving", 2, None)]
    assert unsafe_topics(snap, snap.policy) == []
    strict = snap.policy.model_copy(update={"min_replication_factor": 3})
    assert [(u.topic, u.kind) for u in unsafe_topics(snap, strict)] == [("moving", "below_min_rf")]


def test_the_manager_exports_each_unsafe_topic_and_a_count_per_kind(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    registry = rig.manager.metrics.registry
    rig.manager.metrics.safety.observe_unsafe_topics([UnsafeTopic("pay", "below_min_rf", 1, None)])
    sample = registry.get_sample_value
    assert sample("kmedic_unsafe_topic", {"cluster": "c", "topic": "pay", "kind": "below_min_rf"})
    assert sample("kmedic_unsafe_topics", {"cluster": "c", "kind": "below_min_rf"}) == 1
    assert sample("kmedic_unsafe_topics", {"cluster": "c", "kind": "min_isr_loses_writes"}) == 0
    rig.manager.metrics.safety.observe_unsafe_topics([])
    assert (
        sample("kmedic_unsafe_topic", {"cluster": "c", "topic": "pay", "kind": "below_min_rf"})
        is None
    )
    assert sample("kmedic_unsafe_topics", {"cluster": "c", "kind": "below_min_rf"}) == 0


class Client:
    """describe_configs as kafka-python answers it, for the topics it knows."""

    def __init__(self, settings: dict[str, str]) -> None:
        self.settings = settings
        self.asked: list[list[str]] = []
        self.down = False

    def describe_configs(self, resources: list[Any], config_filter: str) -> Any:
        assert config_filter == "all"
        if self.down:
            raise OSError("timed out")
        self.asked.append([r.name for r in resources])
        return {
            "topic": {
                r.name: {"min.insync.replicas": {"value": self.settings[r.name]}}
                for r in resources
                if r.name in self.settings  # a topic the broker does not know yet: no value
            }
        }


def test_topic_settings_are_read_for_new_topics_at_once_and_for_all_every_refresh() -> None:
    now = [0.0]
    configs = topic_configs(refresh_s=300, clock=lambda: now[0])
    client = Client({"a": "2", "b": "1", "c": "3"})
    assert configs.read(client, {"a", "b"}) == {"a": 2, "b": 1}
    now[0] = 10
    assert configs.read(client, {"a", "b", "c"}) == {"a": 2, "b": 1, "c": 3}
    assert client.asked == [["a", "b"], ["c"]], "only the new topic is read"
    client.settings["a"] = "1"  # an operator's change shows at the next refresh
    now[0] = 300
    assert configs.read(client, {"a", "c"}) == {"a": 1, "c": 3}  # b was deleted: forgotten
    assert client.asked[-1] == ["a", "c"]


def test_a_topic_not_known_yet_is_asked_again_seconds_later_and_then_ever_less_often() -> None:
    """A topic created a moment ago, not yet known to the broker asked, is read a few seconds
    later, not at the next refresh (CI: a new topic's setting unread for 5 minutes); a key that
    never answers is asked at doubling waits up to the refresh, not every cycle."""
    now = [0.0]
    configs = topic_configs(refresh_s=300, clock=lambda: now[0])
    client = Client({"a": "2"})
    assert configs.read(client, {"a", "new", "never"}) == {"a": 2}
    client.settings["new"] = "2"  # the broker has learnt it
    now[0] = 4.9
    assert configs.read(client, {"a", "new", "never"}) == {"a": 2}
    now[0] = 5
    assert configs.read(client, {"a", "new", "never"}) == {"a": 2, "new": 2}
    assert client.asked[-1] == ["never", "new"]
    asked_at = []
    for second in range(6, 300):
        now[0] = second
        before = len(client.asked)
        configs.read(client, {"a", "new", "never"})
        if len(client.asked) > before:
            assert client.asked[-1] == ["never"]
            asked_at.append(second)
    assert asked_at == [15, 35, 75, 155]  # waits of 10, 20, 40 and 80 s
    now[0] = 300  # the refresh asks every key
    configs.read(client, {"a", "new", "never"})
    assert client.asked[-1] == ["a", "never", "new"]


def test_a_failed_read_keeps_what_was_known_and_is_tried_again() -> None:
    now = [0.0]
    configs = topic_configs(refresh_s=300, clock=lambda: now[0])
    client = Client({"a": "2", "b": "1"})
    assert configs.read(client, {"a"}) == {"a": 2}
    client.down = True
    now[0] = 400
    assert configs.read(client, {"a", "b"}) == {"a": 2}
    client.down = False
    assert configs.read(client, {"a", "b"}) == {"a": 2, "b": 1}


def test_the_policy_kmedic_creates_its_own_topics_with_passes_its_own_check() -> None:
    """kmedic/own_topics.py against find_unsafe, for every cluster size and role: an own topic
    at the min.insync.replicas kmedic creates it with is never called unsafe for it (its RF
    only, which the cluster's size caps, may be named); the audit topic at 1 under a name
    that is not kmedic's is (min ISR 1 at RF 3 loses writes)."""
    own = OwnTopics.named("s", "a", ("l",))
    for brokers in range(1, 8):
        for wanted in range(1, 6):
            rf = own_replication(wanted, brokers)
            assert 1 <= rf <= min(wanted, brokers)
            for name, role in (("s", "stats"), ("a", "audit"), ("l", "loads")):
                isr = own_min_insync(role, rf)  # type: ignore[arg-type]
                found = find_unsafe([TopicFacts(name, rf, isr)], min_rf=3, own=own)
                assert [u.kind for u in found] == (["below_min_rf"] if rf < 3 else []), found
    stranger = find_unsafe([TopicFacts("x", 3, 1)], min_rf=3, own=own)
    assert [u.kind for u in stranger] == ["min_isr_loses_writes"]
    # Not as kmedic creates it (an operator lowered the stats topic's): judged as any topic.
    lowered = find_unsafe([TopicFacts("s", 3, 1)], min_rf=3, own=own)
    assert [u.kind for u in lowered] == ["min_isr_loses_writes"]
