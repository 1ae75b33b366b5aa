"""A heal never waits for the load pipeline: with stale or missing loads it places replicas by
size and replica count, every constraint held, and says so; balancing still refuses."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from planner_fixtures import GB, MB, NOW, broker, make, part

from manager.analyzer.planner import decide
from manager.model.moves import Move

ALIVE = {1, 2, 3, 4, 5}


def _brokers(**kw: Any) -> list[dict[str, Any]]:
    return [broker(i, f"/r{(i - 1) % 3 + 1}", alive=i in ALIVE, **kw) for i in range(1, 7)]


def _reason_codes(decision: Any) -> set[str]:
    return {r.code for r in decision.reasons}


def test_stale_loads_still_heal_and_say_why() -> None:
    parts = [part(n, [6, 1 + n % 5], size=(n + 1) * GB, alive=ALIVE, valid=False) for n in range(5)]
    decision = decide(make(_brokers(), {"t": parts}))
    assert decision.outcome == "act" and decision.kind == "heal", decision.summary
    codes = _reason_codes(decision)
    assert "heal_without_loads" in codes and "stale_load_data" not in codes
    message = next(r.message for r in decision.reasons if r.code == "heal_without_loads")
    assert "valid load window" in message  # the stale gate's own words, with its numbers
    assert decision.bytes_to_move == sum((n + 1) * GB for n in range(5))


def test_missing_loads_and_silent_agents_still_heal() -> None:
    brokers = _brokers()
    for b in brokers:
        b["last_stats_ms"] = NOW - 3_600_000  # every agent silent for an hour
    parts = [part(n, [6, 1 + n % 5], alive=ALIVE) for n in range(4)]
    for p in parts:
        p["load"] = None  # the Spark job never published
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "act" and decision.kind == "heal", decision.summary
    assert "heal_without_loads" in _reason_codes(decision)


def test_fresh_loads_heal_as_before_without_the_reason() -> None:
    parts = [part(n, [6, 1 + n % 5], alive=ALIVE) for n in range(4)]
    decision = decide(make(_brokers(), {"t": parts}))
    assert decision.outcome == "act"
    assert "heal_without_loads" not in _reason_codes(decision)


def test_without_loads_the_emptiest_disk_takes_the_replica() -> None:
    # Broker 3 is the busiest on the network but has the emptiest disk: without loads, the
    # heal cannot know the traffic and goes by disk.
    brokers = _brokers()
    for b in brokers:
        b["disk_used_bytes"] = {1: 500 * GB, 2: 400 * GB, 3: 10 * GB, 4: 450 * GB, 5: 300 * GB}.get(
            b["id"]
        )
    parts = [part(0, [6, 1], size=GB, alive=ALIVE, valid=False)]
    parts += [part(n, [3, 4], bytes_in=40 * MB, alive=ALIVE, valid=False) for n in range(1, 3)]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "act"
    first = decision.actions[0]
    assert isinstance(first, Move) and 3 in first.target


def test_a_dead_broker_within_grace_waits_even_with_stale_loads() -> None:
    brokers = _brokers()
    brokers[5]["dead_since_ms"] = NOW - 1000  # dead one second: well within the grace period
    parts = [part(n, [6, 1 + n % 5], alive=ALIVE, valid=False) for n in range(3)]
    decision = decide(make(brokers, {"t": parts}))
    assert decision.outcome == "wait", decision.summary


def test_balancing_still_refuses_on_stale_loads() -> None:
    alive = {1, 2, 3}
    brokers = [broker(i, f"/r{i}") for i in range(1, 4)]
    hot = [part(n, [1, 2], bytes_in=60 * MB, alive=alive, valid=False) for n in range(2)]
    decision = decide(make(brokers, {"t": hot}))
    assert decision.outcome == "refuse"
    assert "stale_load_data" in _reason_codes(decision)


def test_other_gates_still_refuse_a_heal_without_loads() -> None:
    parts = [part(n, [6, 1 + n % 5], alive=ALIVE, valid=False) for n in range(3)]
    decision = decide(make(_brokers(), {"t": parts}, policy={"max_moves_per_cycle": 2}))
    assert decision.outcome == "refuse"
    assert "action_budget_exceeded" in _reason_codes(decision)
    assert "stale_load_data" not in _reason_codes(decision)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=12),
    firsts=st.lists(st.integers(min_value=1, max_value=5), min_size=12, max_size=12),
)
def test_a_heal_without_loads_holds_every_constraint(sizes: list[int], firsts: list[int]) -> None:
    """Whatever the sizes, a heal planned by size acts (so it passed the planner's independent
    placement check), moves only the dead broker's replicas, and spreads each partition over
    as many racks as before."""
    parts = [
        part(n, [6, firsts[n], 1 + firsts[n] % 5], size=s * GB, alive=ALIVE, valid=False)
        for n, s in enumerate(sizes)
    ]
    snap = make(_brokers(), {"t": parts})
    decision = decide(snap)
    assert decision.outcome == "act", decision.summary
    assert "heal_without_loads" in _reason_codes(decision)
    rack = {b: f"/r{(b - 1) % 3 + 1}" for b in range(1, 7)}
    assert len(decision.actions) == len(parts)
    for action in decision.actions:
        assert isinstance(action, Move)
        to, frm = action.target, action.before
        assert 6 not in to and len(set(to)) == len(to) == len(frm)
        assert set(frm) - {6} <= set(to)
        assert len({rack[b] for b in to}) >= len({rack[b] for b in frm})
