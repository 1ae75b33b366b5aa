"""Readiness scenario keys (pure): a scenario keeps its key while nothing its heal depends on
changes, and then its verdict is the same; a change to what it depends on changes its key."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from planner_fixtures import GB, broker, make, part

from manager.analyzer.readiness import Verdict, scenarios, verdict
from manager.analyzer.scenario_keys import bucket, scenario_keys
from manager.model.snapshot import Snapshot
from manager.model.topics import Topics

RACKS = {1: "/r1", 2: "/r1", 3: "/r2", 4: "/r2", 5: "/r3", 6: "/r3"}


def layout(n: int) -> list[int]:
    return [n % 2 + 1, n % 2 + 3, n % 2 + 5]  # partition n: one replica per rack


def cluster(
    placement: dict[int, list[int]] | None = None,
    isr: dict[int, list[int]] | None = None,
    sizes: dict[int, int] | None = None,
    *,
    invalid: frozenset[int] = frozenset(),
    pay: list[int] | None = None,
    **extra: Any,
) -> Snapshot:
    placement, isr, sizes = placement or {}, isr or {}, sizes or {}
    topics = {
        "t": [
            part(
                n,
                placement.get(n, layout(n)),
                isr=isr.get(n),
                size=sizes.get(n, GB),
                valid=n not in invalid,
            )
            for n in range(6)
        ]
    }
    if pay is not None:
        topics["pay"] = [part(0, pay)]
        extra |= {
            "broker_groups": [{"name": "four", "brokers": [1, 2, 3, 5]}],
            "isolation_groups": [{"name": "pay", "topics": ["pay"], "primary": "four"}],
        }
    return make([broker(b, RACKS[b]) for b in RACKS], topics, **extra)


def keys(snap: Snapshot) -> dict[tuple[str, str], object]:
    return {(s.kind, s.name): k for s, k in scenario_keys(snap, scenarios(snap)).items()}


def changed(before: Snapshot, after: Snapshot) -> set[tuple[str, str]]:
    old, new = keys(before), keys(after)
    return {s for s in old if old[s] != new[s]}


ALL = set(keys(cluster()))


def test_the_same_cluster_a_moment_later_keeps_every_key() -> None:
    snap = cluster()
    later = snap.model_copy(update={"taken_at": snap.taken_at + 30_000})
    assert changed(snap, later) == set()


def test_a_load_window_gone_invalid_changes_only_the_scenarios_losing_one_of_its_replicas() -> None:
    # Partition 5 is on [2, 4, 6].
    assert changed(cluster(), cluster(invalid=frozenset({5}))) == {
        ("broker", "2"),
        ("broker", "4"),
        ("broker", "6"),
        ("rack", "/r1"),
        ("rack", "/r2"),
        ("rack", "/r3"),
    }


def test_sizes_count_by_the_brokers_totals_within_ten_percent() -> None:
    # Each broker holds 3 GB. Partition 5 growing by 10 MB moves its brokers' totals by a
    # third of a percent: no key changes (here; a total just under a bucket's edge would cross
    # it, and the sweep decides again). Doubling it (+1 GB, a third) changes them all: the
    # survivors' disks are what a heal's destinations are chosen by.
    assert bucket(3 * GB, 100e6) == bucket(3 * GB + 10_000_000, 100e6)
    assert changed(cluster(), cluster(sizes={5: GB + 10_000_000})) == set()
    assert changed(cluster(), cluster(sizes={5: 2 * GB})) == ALL
    # Below the floors, nothing counts: a quiet test cluster's kilobytes.
    assert bucket(1_000, 100e6) == bucket(90_000_000, 100e6)


def test_an_under_replicated_partition_changes_every_key() -> None:
    # The gates refuse any heal while a partition is under-replicated without a dead broker.
    assert changed(cluster(), cluster(isr={0: [1, 3]})) == ALL


def test_a_replica_moved_anywhere_changes_every_key() -> None:
    # The survivors' replica counts change: any heal may now choose other destinations.
    assert changed(cluster(), cluster(placement={0: [2, 3, 5]})) == ALL


def test_a_snapshot_read_as_columns_or_as_models_has_the_same_keys() -> None:
    snap = cluster(isr={2: [1, 3]}, invalid=frozenset({1}), pay=[1, 3, 5])
    as_models = snap.model_copy(update={"topics": Topics.of(snap.topics.models())})
    assert keys(snap) == keys(as_models)


def test_a_policy_change_changes_every_key() -> None:
    assert changed(cluster(), cluster(policy={"max_dead_brokers": 1})) == ALL


def test_a_group_topic_counts_for_every_scenario_it_could_land_in() -> None:
    # pay's partition is on [1, 3, 5] of the group's [1, 2, 3, 5]; its ISR changing matters to
    # the loss of broker 2 too (the group's spare), though broker 2 holds none of it.
    before = cluster(pay=[1, 3, 5])
    after = before.model_copy(
        update={
            "topics": (
                before.topics[0],
                before.topics[1].model_copy(
                    update={
                        "partitions": (
                            before.topics[1].partitions[0].model_copy(update={"isr": (1, 3)}),
                        )
                    }
                ),
            )
        }
    )
    assert ("broker", "2") in changed(before, after)


def same(a: Verdict, b: Verdict) -> bool:
    return (a.healable, a.outcome, a.why, a.moves, a.bytes_to_copy) == (
        b.healable,
        b.outcome,
        b.why,
        b.moves,
        b.bytes_to_copy,
    )


replica_sets = st.sampled_from([layout(0), layout(1), [1, 4, 5], [2, 3, 6], [1, 2, 3]])


@given(
    st.dictionaries(st.integers(0, 5), replica_sets, max_size=3),
    st.dictionaries(st.integers(0, 5), st.sampled_from([[], [0], [0, 1]]), max_size=3),
    st.booleans(),
)
def test_an_unchanged_key_means_an_unchanged_verdict(
    moved: dict[int, list[int]], shrunk: dict[int, list[int]], pay: bool
) -> None:
    """Exact changes only (a replica moved, an ISR shrunk), which the keys must see; sizes and
    traffic drifting within a bucket are the documented approximation."""
    before = cluster(pay=[1, 3, 5] if pay else None)
    placement = {n: moved.get(n, layout(n)) for n in range(6)}
    isr = {
        n: [r for i, r in enumerate(placement[n]) if i not in shrunk.get(n, [])] for n in range(6)
    }
    after = cluster(placement, isr, pay=[1, 3, 5] if pay else None)
    old = scenario_keys(before, scenarios(before))
    new = scenario_keys(after, scenarios(after))
    for scenario in scenarios(after):
        if old.get(scenario) == new[scenario]:
            assert same(verdict(before, scenario), verdict(after, scenario)), scenario
