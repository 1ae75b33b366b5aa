"""Throttle ownership (manager.throttling.ownership): kmedic changes and removes only what
it set."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.admin import AlterConfigOp, ConfigResourceType

from kmedic.errors import KmedicError
from manager.throttling.configs import Throttles, _resource
from manager.throttling.ownership import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    ThrottleRecord,
    change_list,
    change_rate,
    parse_entries,
)
from manager.throttling.targets import ThrottleTargets

entries = st.frozensets(
    st.builds(lambda p, b: f"{p}:{b}", st.integers(0, 5), st.integers(1, 6)), max_size=8
)


def value_of(items: frozenset[str]) -> str | None:
    return ",".join(sorted(items)) if items else None


@given(operator=entries, wanted=entries)
def test_adding_then_releasing_leaves_the_operators_list_as_it_was(
    operator: frozenset[str], wanted: frozenset[str]
) -> None:
    added = change_list(value_of(operator), frozenset(), wanted)
    assert parse_entries(added.value) == operator | wanted
    assert added.owned == wanted - operator  # an entry already there stays the operator's
    assert added.changed == bool(wanted - operator)
    released = change_list(added.value, added.owned, frozenset())
    assert parse_entries(released.value) == operator
    assert released.owned == frozenset()
    if not operator:
        assert released.value is None  # a list left empty is deleted, not set to ""


@given(operator=entries, owned=entries, wanted=entries, later=entries)
def test_the_operators_entries_survive_any_sequence_of_kmedic_changes(
    operator: frozenset[str], owned: frozenset[str], wanted: frozenset[str], later: frozenset[str]
) -> None:
    mine = owned - operator
    current = value_of(operator | mine)
    first = change_list(current, mine, wanted)
    second = change_list(first.value, first.owned, later)
    for step in (first, second):
        assert operator <= (parse_entries(step.value) or frozenset())
        assert not (step.owned & operator)
    assert parse_entries(second.value) == operator | later


@pytest.mark.parametrize("current", ["*", "0:1,*", " * "])
def test_every_replica_throttled_by_someone_else_is_left_alone(current: str) -> None:
    change = change_list(current, frozenset({"0:1"}), frozenset({"0:1", "1:2"}))
    assert (change.value, change.changed, change.owned) == (current, False, frozenset())


def test_entries_are_written_in_partition_then_broker_order() -> None:
    change = change_list("10:1", frozenset(), frozenset({"2:3", "2:10", "0:4"}))
    assert change.value == "0:4,2:3,2:10,10:1"


@pytest.mark.parametrize(
    ("current", "owned", "wanted", "expected"),
    [
        # nobody's: kmedic sets it and owns it
        (None, None, "100", ("100", True, "100")),
        # kmedic's, still wanted: nothing to send
        ("100", "100", "100", ("100", False, "100")),
        # kmedic's, no longer wanted: removed
        ("100", "100", None, (None, True, None)),
        # the operator's: never changed, never owned, never removed
        ("7", None, "100", ("7", False, None)),
        ("7", None, None, ("7", False, None)),
        # kmedic's once, changed by an operator since: theirs now
        ("7", "100", None, ("7", False, None)),
        ("7", "100", "100", ("7", False, None)),
        # kmedic's, deleted by someone: set again while a move needs it
        (None, "100", "100", ("100", True, "100")),
        (None, "100", None, (None, False, None)),
        # an empty value is no value
        ("", None, None, (None, False, None)),
    ],
)
def test_rates(
    current: str | None,
    owned: str | None,
    wanted: str | None,
    expected: tuple[str | None, bool, str | None],
) -> None:
    change = change_rate(current, owned, wanted)
    assert (change.value, change.changed, change.owned) == expected


records = st.builds(
    ThrottleRecord,
    st.dictionaries(
        st.tuples(
            st.sampled_from(["a", "b.c"]), st.sampled_from([LEADER_REPLICAS, FOLLOWER_REPLICAS])
        ),
        entries.filter(bool),
        max_size=4,
    ),
    st.dictionaries(
        st.tuples(st.integers(1, 6), st.sampled_from([LEADER_RATE, FOLLOWER_RATE])),
        st.sampled_from(["1024", "50000000"]),
        max_size=4,
    ),
)


@given(record=records)
def test_the_record_survives_its_trip_through_the_stored_plan(record: ThrottleRecord) -> None:
    assert ThrottleRecord.from_field(record.to_field()) == record


def test_a_rate_kmedic_changes_stays_its_own_if_it_crashes_before_sending_the_change() -> None:
    """The record stored before a change of kmedic's own rate (a new throttle setting after a
    restart, an adaptive rate) keeps the value it replaces: the change may never be sent, and
    the successor must remove the old value, not take it for an operator's."""
    key = (3, LEADER_RATE)
    before = ThrottleRecord(rates={key: "50000000"})
    changing = ThrottleRecord(rates={key: "100000000"})
    stored = ThrottleRecord.from_field(before.union(changing).to_field())
    assert stored.rates == {key: "100000000"} and stored.earlier == {key: "50000000"}
    # The crash came before the change was sent: the old value is still set.
    left = change_rate("50000000", stored.rates[key], None, stored.earlier[key])
    assert (left.value, left.changed, left.owned) == (None, True, None)
    # Sent: the new value, kmedic's as ever.
    sent = change_rate("100000000", stored.rates[key], None, stored.earlier[key])
    assert (sent.value, sent.changed) == (None, True)
    # An operator's value since is theirs, whatever kmedic set before.
    theirs = change_rate("7", stored.rates[key], None, stored.earlier[key])
    assert (theirs.value, theirs.changed, theirs.owned) == ("7", False, None)
    # Once the change is sent, the next record drops the earlier value.
    assert not ThrottleRecord(rates={key: "100000000"}).earlier
    # A union that changes nothing keeps no earlier value.
    assert not before.union(before).earlier


@given(a=records, b=records)
def test_a_union_owns_everything_either_owns(a: ThrottleRecord, b: ThrottleRecord) -> None:
    both = a.union(b)
    for rec in (a, b):
        assert all(e <= both.replicas[k] for k, e in rec.replicas.items())
    assert set(both.rates) == set(a.rates) | set(b.rates)


@pytest.mark.parametrize(
    "raw",
    [
        None,
        "throttles",
        [],
        {"replicas": "x", "rates": 3},
        {"replicas": [None, {"topic": 1}, {"topic": "t", "config": "retention.ms", "entries": []}]},
        {"replicas": [{"topic": "t", "config": LEADER_REPLICAS, "entries": ["*", "x:1", 4]}]},
        {"rates": [{"broker": "1", "config": LEADER_RATE, "value": "1"}]},
        {"rates": [{"broker": True, "config": LEADER_RATE, "value": "1"}]},
        {"rates": [{"broker": 1, "config": "num.io.threads", "value": "1"}]},
        {"rates": [{"broker": 1, "config": LEADER_RATE, "value": 1}]},
    ],
)
def test_a_record_that_does_not_parse_owns_nothing(raw: Any) -> None:
    """What cannot be read cannot be proven kmedic's, so it is left alone."""
    assert not ThrottleRecord.from_field(raw)


def test_a_partly_readable_record_keeps_what_parses() -> None:
    raw = {
        "replicas": [{"topic": "t", "config": LEADER_REPLICAS, "entries": ["0:1", "*", "x"]}],
        "rates": [
            {"broker": 2, "config": FOLLOWER_RATE, "value": "9"},
            {"broker": 3, "config": "x", "value": "9"},
        ],
    }
    record = ThrottleRecord.from_field(raw)
    assert record.replicas == {("t", LEADER_REPLICAS): frozenset({"0:1"})}
    assert record.rates == {(2, FOLLOWER_RATE): "9"}


def test_the_executor_never_writes_a_config_other_than_the_throttles() -> None:
    """Issue 39.6: above all never min.insync.replicas (lowering it in an incident clears the
    topic's eligible leader replicas and acknowledges writes with fewer copies)."""
    with pytest.raises(KmedicError, match=r"refusing to change min\.insync\.replicas of t"):
        _resource(ConfigResourceType.TOPIC, "t", {"min.insync.replicas": "1"})
    allowed = _resource(
        ConfigResourceType.TOPIC, "t", {"leader.replication.throttled.replicas": "0:1"}
    )
    assert allowed.name == "t"


class _Configs:
    """Broker configs as an Admin client sees them; a change to a broker in ``lost`` times out
    for the caller but is applied (a fenced broker forwards it to the controller once its
    link is back)."""

    def __init__(self) -> None:
        self.brokers: dict[str, dict[str, str]] = {}
        self.topics: dict[str, dict[str, str]] = {}
        self.lost: set[str] = set()
        self.unreachable: set[str] = set()  # brokers that do not answer (a cut link)

    def describe_configs(self, resources: list[Any], config_filter: str) -> dict[str, Any]:
        out: dict[str, dict[str, Any]] = {"broker": {}, "topic": {}}
        for r in resources:
            if r.resource_type == ConfigResourceType.BROKER and r.name in self.unreachable:
                # Kafka: a broker's configs come from it alone; one not answering fails all
                raise KmedicError(f"cannot read configs: broker {r.name} timed out")
            kind = "broker" if r.resource_type == ConfigResourceType.BROKER else "topic"
            values = (self.brokers if kind == "broker" else self.topics).get(r.name, {})
            out[kind][r.name] = {k: {"value": v} for k, v in values.items()}
        return out

    def alter_configs(self, resources: list[Any], **_: Any) -> dict[str, Any]:
        for r in resources:
            kind = "broker" if r.resource_type == ConfigResourceType.BROKER else "topic"
            values = (self.brokers if kind == "broker" else self.topics).setdefault(r.name, {})
            for key, (op, value) in r.configs.items():
                if op == AlterConfigOp.SET:
                    values[key] = value
                else:
                    values.pop(key, None)
            if r.name in self.lost:
                raise KmedicError("cannot change throttle configs: Request timed out")
        return {"broker": {r.name: "OK" for r in resources}}


def test_a_broker_the_manager_cannot_reach_waits_and_holds_up_nobody_elses_throttles() -> None:
    # Found by CI: a broker cut off from the manager alone (alive to the cluster) failed the
    # one request reading every throttled broker's configs; the retries held the manager's
    # cycle for half a minute and no throttle changed anywhere.
    configs = _Configs()
    asked: list[str] = []

    def retried(call: Any, what: str) -> Any:
        asked.append(f"retried {what}")
        return call(configs)

    def once(call: Any, what: str) -> Any:
        asked.append(f"once {what}")
        return call(configs)

    throttles = Throttles(True, retried, once)
    live = frozenset({1, 4})
    targets = ThrottleTargets({"t": ["0:1"]}, {}, frozenset())
    wanted = {(b, LEADER_RATE): "1000000" for b in (1, 4)}
    configs.unreachable = {"4"}
    throttles.commit(throttles.prepare(targets, live, wanted))
    assert configs.topics["t"] == {LEADER_REPLICAS: "0:1"}
    assert configs.brokers == {"1": {LEADER_RATE: "1000000"}}
    assert throttles.wanted_rates() == {(1, LEADER_RATE): "1000000"}  # 4's change waits
    assert "once read broker 4's throttle configs" in asked
    assert "once change throttle configs" in asked  # broker 1's: only it answers
    assert not any(a.startswith("retried read broker") for a in asked)
    configs.unreachable = set()
    throttles.commit(throttles.prepare(targets, live, wanted))
    assert configs.brokers["4"] == {LEADER_RATE: "1000000"}
    throttles.release(live)
    assert configs.brokers == {"1": {}, "4": {}} and configs.topics == {"t": {}}


def test_a_rate_whose_change_timed_out_is_still_removed_once_no_move_needs_it() -> None:
    # Found by the soak: a broker cut off from the controllers took kmedic's rate after the
    # call had timed out; kmedic took the change as not made, and the rate stayed for good.
    configs = _Configs()
    throttles = Throttles(True, lambda call, what: call(configs))
    live = frozenset({1, 4})
    wanted = {(b, key): "1000000" for b in (1, 4) for key in (LEADER_RATE, FOLLOWER_RATE)}
    configs.lost = {"4"}
    throttles.commit(throttles.prepare(ThrottleTargets({}, {}, frozenset()), live, wanted))
    assert configs.brokers["4"] == {LEADER_RATE: "1000000", FOLLOWER_RATE: "1000000"}
    configs.lost = set()
    left = throttles.release(live)
    assert configs.brokers == {"1": {}, "4": {}} and not left


def test_a_rate_whose_change_timed_out_unapplied_is_not_taken_for_someone_elses() -> None:
    configs = _Configs()
    throttles = Throttles(True, lambda call, what: call(configs))
    live = frozenset({4})
    wanted = {(4, LEADER_RATE): "1000000"}
    configs.lost = {"4"}
    configs.alter_configs = _timing_out  # type: ignore[method-assign]
    throttles.commit(throttles.prepare(ThrottleTargets({}, {}, frozenset()), live, wanted))
    assert configs.brokers == {}
    del configs.alter_configs  # back to the class's: the next step sends it again
    configs.lost = set()
    throttles.commit(throttles.prepare(ThrottleTargets({}, {}, frozenset()), live, wanted))
    assert configs.brokers["4"] == {LEADER_RATE: "1000000"}
    throttles.release(live)
    assert configs.brokers["4"] == {}


def _timing_out(resources: list[Any], **_: Any) -> dict[str, Any]:
    raise KmedicError("cannot change throttle configs: Request timed out")
