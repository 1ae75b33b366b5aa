"""The executor's pure parts: the move book (one active move per partition, started in the
order submitted) and the verdict on a move in flight, from one read alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmedic.errors import KmedicError
from manager.executor.in_flight import track
from manager.executor.move_book import MoveBook
from manager.executor.move_state import ClusterView
from manager.model.moves import Move

T = "t"


def _move(p: int, target: tuple[int, ...] = (1, 2)) -> Move:
    return Move(T, p, target)


def _view(
    replicas: tuple[int, ...], *, ongoing: bool = False, live: frozenset[int] = frozenset({1, 2, 3})
) -> ClusterView:
    listed = {(T, 0): {"replicas": [*replicas], "adding_replicas": [], "removing_replicas": []}}
    return ClusterView(
        replicas={(T, 0): replicas},
        leaders={(T, 0): replicas[0]},
        live_brokers=live,
        ongoing=listed if ongoing else {},
    )


def test_a_partition_has_one_active_move_and_a_finished_one_may_be_replaced() -> None:
    book = MoveBook()
    book.submit([_move(0)])
    with pytest.raises(KmedicError, match="t:0 already has a move pending"):
        book.submit([_move(0, (2, 3))])
    book.states[(T, 0)].status = "completed"
    book.submit([_move(0, (2, 3))], adopted=True)
    assert [s.move.target for s in book.pending()] == [(2, 3)]
    assert book.states[(T, 0)].adopted


@given(st.lists(st.lists(st.integers(0, 5), max_size=4, unique=True), max_size=6))
def test_each_pending_partition_is_listed_once_in_the_order_it_was_submitted(
    plans: list[list[int]],
) -> None:
    """Plan after plan, each finishing what was pending before the next (as the executor
    does when a move fails before it starts): a partition is judged once per step, as its
    newest move."""
    book = MoveBook()
    for plan in plans:
        for state in book.pending():
            state.status = "failed"
        book.submit([_move(p) for p in plan])
        pending = [s.move.partition for s in book.pending()]
        assert pending == plan
        assert {s.move.partition for s in book.active()} == set(plan)
    book.clear()
    assert book.pending() == [] and book.states == {}


def test_a_move_in_flight_runs_while_kafka_lists_it_and_fails_with_a_dead_destination() -> None:
    assert track(_move(0, (1, 2)), _view((1, 2, 3), ongoing=True)).fate == "run"
    said = track(_move(0, (1, 2)), _view((1, 2, 3), ongoing=True, live=frozenset({1, 3})))
    assert (said.fate, said.reason) == ("fail", "destination broker 2 is not alive")


def test_a_move_is_in_place_only_with_its_replicas_in_its_order() -> None:
    assert track(_move(0, (1, 2)), _view((1, 2))).fate == "in_place"
    # A reorder (a leadership move) shows the same set before Kafka applies it.
    said = track(_move(0, (1, 2)), _view((2, 1)))
    assert (said.fate, said.reason) == ("ended", "reassignment ended with replicas [2, 1]")
