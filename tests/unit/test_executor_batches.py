"""Batching and throttle planning of the executor, without Kafka."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmedic.errors import KmedicError
from manager.executor.batches import IntoLimit, least_written_first, select_batch
from manager.model.moves import Move
from manager.throttling.ownership import FOLLOWER_RATE, LEADER_RATE
from manager.throttling.targets import WriteBudget, still_copying, throttle_targets

BROKERS = st.integers(1, 6)


@st.composite
def moves(draw: st.DrawFn) -> tuple[Move, tuple[int, ...]]:
    topic = draw(st.sampled_from(["a", "b"]))
    partition = draw(st.integers(0, 5))
    current = tuple(draw(st.lists(BROKERS, min_size=1, max_size=3, unique=True)))
    target = tuple(draw(st.lists(BROKERS, min_size=1, max_size=3, unique=True)))
    return Move(topic, partition, target), current


def test_move_validation_names_the_problem() -> None:
    with pytest.raises(KmedicError, match=r"move of t:0: target \[1, 1\] repeats a broker"):
        Move("t", 0, (1, 1))
    with pytest.raises(KmedicError, match="target replica list is empty"):
        Move("t", 0, ())


def test_brokers_involved_are_sources_and_destinations() -> None:
    assert Move("t", 0, (1, 4, 3)).brokers_involved((1, 2, 3)) == {1, 2, 3, 4}
    assert Move("t", 0, (1, 2)).brokers_involved((1, 2, 3)) == {3}  # removal only
    assert Move("t", 0, (2, 1)).brokers_involved((1, 2)) == set()  # reorder only


def test_a_busy_broker_does_not_stall_moves_elsewhere() -> None:
    current = {("t", 0): (1, 2), ("t", 1): (1, 2), ("t", 2): (3, 4)}
    pending = [Move("t", 0, (1, 5)), Move("t", 1, (1, 6)), Move("t", 2, (3, 6))]
    chosen = select_batch(pending, current, [], max_per_broker=1, max_per_cluster=10)
    assert [m.partition for m in chosen] == [0, 2]


def test_cluster_limit_and_one_move_per_partition() -> None:
    current = {("t", p): (1,) for p in range(5)}
    pending = [Move("t", p, (p + 2,)) for p in range(5)]
    in_flight = [Move("t", 0, (9,))]
    chosen = select_batch(pending, current, in_flight, max_per_broker=99, max_per_cluster=3)
    assert [m.partition for m in chosen] == [1, 2]


@given(
    st.lists(moves(), max_size=12),
    st.lists(moves(), max_size=4),
    st.integers(1, 3),
    st.integers(1, 6),
    st.integers(1, 4),
)
def test_batches_respect_the_limits_and_are_greedy(
    pending_raw: list[tuple[Move, tuple[int, ...]]],
    flight_raw: list[tuple[Move, tuple[int, ...]]],
    per_broker: int,
    per_cluster: int,
    reorders: int,
) -> None:
    current = {m.tp: c for m, c in pending_raw + flight_raw}

    def reorder(m: Move) -> bool:
        return set(m.target) == set(current[m.tp])

    flight: list[Move] = []
    load: Counter[int] = Counter()
    for m, _ in flight_raw:  # a valid in-flight set: within the limits, one per partition
        inv = m.brokers_involved(current[m.tp])
        if m.tp in {f.tp for f in flight}:
            continue
        if sum(reorder(f) == reorder(m) for f in flight) >= (
            reorders if reorder(m) else per_cluster
        ):
            continue
        if any(load[b] >= per_broker for b in inv):
            continue
        load.update(inv)
        flight.append(m)
    pending = [m for m, _ in pending_raw]
    chosen = select_batch(
        pending,
        current,
        flight,
        max_per_broker=per_broker,
        max_per_cluster=per_cluster,
        max_reorders=reorders,
    )
    it = iter(pending)
    assert all(any(c is p for p in it) for c in chosen)  # an ordered subsequence
    for m in chosen:
        load.update(m.brokers_involved(current[m.tp]))
    assert all(n <= per_broker for n in load.values())
    running = flight + chosen
    copying = sum(not reorder(m) for m in running)
    reordering = sum(reorder(m) for m in running)
    assert copying <= per_cluster and reordering <= reorders
    tps = [m.tp for m in running]
    assert len(tps) == len(set(tps))
    for m in pending:
        if any(m is c for c in chosen):
            continue
        inv = m.brokers_involved(current[m.tp])
        full = reordering >= reorders if reorder(m) else copying >= per_cluster
        assert m.tp in tps or full or any(load[b] >= per_broker for b in inv), (
            f"{m} was left out although it fits"
        )


def test_a_demotion_starts_whole_beside_a_full_load_of_copies() -> None:
    # Found on the shaped cluster: ten moves at a time, a slow broker's demotion reached its
    # busiest partition 17 s after it began; that partition's follower had fallen out of the
    # slow leader's ISR by then, the election was refused, and the slow broker kept leading.
    current = {("d", p): (4, 1 + p % 3) for p in range(25)}
    current.update({("c", p): (1, 2) for p in range(10)})
    copies = [Move("c", p, (1, 3)) for p in range(10)]
    demotion = [Move("d", p, (1 + p % 3, 4)) for p in range(25)]
    chosen = select_batch([*copies, *demotion], current, [], max_per_broker=99, max_per_cluster=10)
    assert chosen == [*copies, *demotion]
    assert (
        select_batch(
            demotion, current, copies, max_per_broker=1, max_per_cluster=10, max_reorders=5
        )
        == demotion[:5]
    )


def test_throttles_cover_sources_and_new_replicas() -> None:
    plan = throttle_targets(
        [Move("t", 0, (1, 4)), Move("t", 3, (2, 5, 6)), Move("u", 1, (1, 2)), Move("v", 0, (8,))],
        {("t", 0): (1, 2), ("t", 3): (2, 5), ("u", 1): (2, 1), ("v", 0): (7, 8)},
    )
    assert plan.leader_replicas == {"t": ("0:1", "0:2", "3:2", "3:5")}
    assert plan.follower_replicas == {"t": ("0:4", "3:6")}
    assert plan.brokers == frozenset({1, 2, 4, 5, 6})


def test_a_dead_broker_does_not_throttle_its_own_heal() -> None:
    # Broker 3 is dead; each partition keeps one distinct live replica and gets a new one.
    current = {("t", p): (10 + p, 3) for p in range(4)}
    pending = [Move("t", p, (10 + p, 20 + p)) for p in range(4)]
    counted = select_batch(pending, current, [], max_per_broker=2, max_per_cluster=10)
    assert len(counted) == 2  # as if the dead broker were sending every copy
    healed = select_batch(
        pending, current, [], max_per_broker=2, max_per_cluster=10, dead=frozenset({3})
    )
    assert [m.partition for m in healed] == [0, 1, 2, 3]


def test_least_written_first_puts_failing_writes_first_then_the_least_written() -> None:
    a, b, c, d, e = (Move("t", p, (1, 2, 3)) for p in range(5))
    writes = {a.tp: 0.5, b.tp: 0.0, c.tp: 2.0, e.tp: 0.5}  # d: not known
    order = least_written_first([a, b, c, d, e], writes, urgent=frozenset({c.tp}))
    # c fails its writes: first, however written; then b and d (none known), a and e in
    # the plan's order (equal), c's peers by their rates.
    assert order == [c, b, d, a, e]


@given(st.lists(st.tuples(st.integers(0, 30), st.floats(0, 1e6), st.booleans()), max_size=30))
def test_least_written_first_reorders_and_keeps_the_plans_order_among_equals(
    drawn: list[tuple[int, float, bool]],
) -> None:
    unique = list({p: (p, w, u) for p, w, u in drawn}.values())
    pending = [Move("t", p, (1, 2)) for p, _, _ in unique]
    writes = {m.tp: w for m, (_, w, _) in zip(pending, unique, strict=True)}
    urgent = frozenset(m.tp for m, (_, _, u) in zip(pending, unique, strict=True) if u)
    order = least_written_first(pending, writes, urgent)
    assert sorted(order, key=pending.index) == pending  # the same moves
    keys = [(m.tp not in urgent, writes[m.tp]) for m in order]
    assert keys == sorted(keys)  # urgent first, then by write rate
    for x, y in pairwise(order):
        if (x.tp not in urgent, writes[x.tp]) == (y.tp not in urgent, writes[y.tp]):
            assert pending.index(x) < pending.index(y)  # stable: the plan's order


def test_the_write_budget_holds_a_second_copy_its_writes_would_take_over() -> None:
    # Brokers 1, 2 send, broker 3 receives every move; broker 3 may take 1.5 MB/s of writes.
    current = {("t", p): (1, 2) for p in range(6)}
    busy, also_busy, quiet, fails, other = (Move("t", p, (1, 2, 3)) for p in range(5))
    elsewhere = Move("t", 5, (1, 2, 4))
    budget = WriteBudget(
        writes={busy.tp: 1e6, also_busy.tp: 1e6, quiet.tp: 0.4e6, fails.tp: 3e6, other.tp: 0.2e6},
        limits={(3, FOLLOWER_RATE): 1.5e6, (4, FOLLOWER_RATE): 0.0},
        urgent=frozenset({fails.tp}),
    )
    chosen = select_batch(
        [busy, also_busy, quiet, fails, other, elsewhere],
        current,
        [],
        max_per_broker=99,
        max_per_cluster=99,
        budget=budget,
    )
    # busy: broker 3's first copy, over nothing; also_busy: 2 MB/s would be over 1.5; quiet:
    # 1.4 fits; fails: urgent, not held (and counted: 4.4); other: held by that count; elsewhere:
    # broker 4's first copy fits though its budget is 0. Senders have no limit: unbounded.
    assert chosen == [busy, quiet, fails, elsewhere]
    # A copy in flight counts: the same pending moves, busy running.
    later = select_batch(
        [also_busy, quiet], current, [busy], max_per_broker=99, max_per_cluster=99, budget=budget
    )
    assert later == [quiet]


@given(
    st.lists(moves(), max_size=12),
    st.dictionaries(
        st.tuples(BROKERS, st.sampled_from([LEADER_RATE, FOLLOWER_RATE])), st.floats(0, 5e6)
    ),
    st.lists(st.floats(0, 2e6), min_size=12, max_size=12),
)
def test_a_broker_copies_over_its_budget_only_as_its_one_copy(
    drawn: list[tuple[Move, tuple[int, ...]]],
    limits: dict[tuple[int, str], float],
    rates: list[float],
) -> None:
    unique = list({m.tp: (m, c) for m, c in drawn}.values())
    current = {m.tp: c for m, c in unique}
    pending = [m for m, _ in unique]
    writes = {m.tp: rates[i] for i, m in enumerate(pending)}
    budget = WriteBudget(writes, limits)
    chosen = select_batch(
        pending, current, [], max_per_broker=99, max_per_cluster=99, budget=budget
    )
    copying: dict[tuple[int, str], list[Move]] = {}
    for move in chosen:
        for key in budget.uses(move, current[move.tp], frozenset()):
            copying.setdefault(key, []).append(move)
    for key, moves_on_key in copying.items():
        total = sum(writes[m.tp] for m in moves_on_key)
        assert len(moves_on_key) == 1 or total <= limits.get(key, float("inf"))
    # No limit at all: the count limits alone decide, as without a budget.
    unbounded = WriteBudget(writes, {})
    assert select_batch(
        pending, current, [], max_per_broker=2, max_per_cluster=5, budget=unbounded
    ) == select_batch(pending, current, [], max_per_broker=2, max_per_cluster=5)


def test_copies_into_one_broker_wait_past_the_into_limit_unless_writes_fail() -> None:
    """Five of a dead broker's partitions, each going to broker 3 from another leader: with
    two copies into a broker at once, the first two start, then a third only when one is
    done. A partition under min.insync.replicas starts anyway and counts; a move that only
    reorders or removes copies nothing into anyone."""
    leaders = (1, 2, 4, 5, 1)
    current = {("t", p): (leader, 6) for p, leader in enumerate(leaders)}
    current[("t", 5)] = (3, 1)
    current[("t", 6)] = (1, 2, 3)
    pending = [Move("t", p, (leader, 3)) for p, leader in enumerate(leaders)]
    reorder, removal = Move("t", 5, (1, 3)), Move("t", 6, (1, 2))
    pending += [reorder, removal]
    dead = frozenset({6})
    limits = {"max_per_broker": 99, "max_per_cluster": 99, "dead": dead}
    chosen = select_batch(pending, current, [], **limits, into=IntoLimit(2))
    assert chosen == [pending[0], pending[1], reorder, removal]
    running = chosen[:2]
    assert select_batch(pending[2:5], current, running, **limits, into=IntoLimit(2)) == []
    assert select_batch(pending[2:5], current, running[:1], **limits, into=IntoLimit(2)) == [
        pending[2]
    ]
    urgent = IntoLimit(2, frozenset({("t", 4)}))
    assert select_batch(pending[2:5], current, running, **limits, into=urgent) == [pending[4]]
    # The urgent copy counts: with it running, nothing else fits into broker 3.
    assert select_batch(pending[2:4], current, [pending[4]], **limits, into=IntoLimit(1)) == []
    # No limit: every copy starts at once, as before.
    assert select_batch(pending, current, [], **limits) == pending
    with pytest.raises(KmedicError, match="at least 1 copy into a broker"):
        select_batch(pending, current, [], **limits, into=IntoLimit(0))


@given(st.lists(moves(), max_size=12), st.lists(moves(), max_size=4), st.integers(1, 3))
def test_no_broker_receives_more_copies_than_the_into_limit_but_for_urgent_ones(
    pending_raw: list[tuple[Move, tuple[int, ...]]],
    flight_raw: list[tuple[Move, tuple[int, ...]]],
    per_broker: int,
) -> None:
    current = {m.tp: c for m, c in pending_raw + flight_raw}

    def added(m: Move) -> list[int]:
        return [b for b in m.target if b not in current[m.tp]]

    into: Counter[int] = Counter()
    flight: list[Move] = []
    for m, _ in flight_raw:  # a valid in-flight set: within the limit, one per partition
        if m.tp in {f.tp for f in flight} or any(into[b] >= per_broker for b in added(m)):
            continue
        into.update(added(m))
        flight.append(m)
    pending = [m for m, _ in pending_raw]
    chosen = select_batch(
        pending,
        current,
        flight,
        max_per_broker=99,
        max_per_cluster=99,
        into=IntoLimit(per_broker),
    )
    for m in chosen:
        into.update(added(m))
    assert all(n <= per_broker for n in into.values())
    tps = {m.tp for m in flight + chosen}
    for m in pending:  # greedy: only a partition already moving or a full broker holds one
        if not any(m is c for c in chosen):
            assert m.tp in tps or any(into[b] >= per_broker for b in added(m))


def test_a_move_whose_new_replicas_are_in_sync_copies_nothing_more() -> None:
    moves = [Move("t", 0, (1, 4)), Move("t", 1, (2, 5, 6)), Move("t", 2, (3, 7))]
    current = {("t", 0): (1, 2), ("t", 1): (2, 5), ("t", 2): (3, 8)}
    # t:0's broker 4 joined the ISR; t:1's broker 6 has not; t:2's ISR was not read.
    isr = {("t", 0): (1, 4), ("t", 1): (2, 5)}
    assert still_copying(moves, current, isr) == moves[1:]
