"""choose_target (manager/analyzer/placement.py) picks what the ranking says: the first broker,
in load order, with the best key among every usable broker that fits - the loop may skip
brokers that cannot beat the best found so far (to spare its capacity checks), never one that
could. Checked against a brute-force reference on the planner properties' clusters."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_planner_properties import _parse, clusters

from manager.analyzer.placement import LoadOrder, choose_target
from manager.analyzer.placement_state import ClusterState


def _reference(
    state: ClusterState,
    order: LoadOrder,
    topic: str,
    size: int,
    others: tuple[int, ...],
    d_in: float,
    d_out: float,
) -> int | None:
    sets = state.topic_sets(topic)
    group = state.aa_group.get(topic)
    tops = {state.loc[b].top for b in others}
    racks = {state.loc[b].rack for b in others}
    for allowed in sets if sets is not None else (None,):
        ranked = []
        for at, (load, b) in enumerate(order.keys):
            if b in others or (allowed is not None and b not in allowed):
                continue
            if not state.fits(b, d_in, d_out, size):
                continue
            loc = state.loc[b]
            spread = (-(loc.top not in tops), -(loc.rack not in racks))
            group_key = (
                (state.aa_domain[group][state.domain[b]], state.aa_broker[group][b])
                if group is not None
                else (0, 0)
            )
            ranked.append(((*spread, *group_key, load), at, b))
        if ranked:
            return min(ranked)[2]
    return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.data())
def test_the_target_is_the_best_ranked_broker_that_fits(data: dict[str, Any], draw: Any) -> None:
    state = ClusterState(_parse(data))
    order = LoadOrder(state)
    for p in range(state.partition_count):
        replicas = state.replicas[p]
        keep = draw.draw(st.integers(0, len(replicas) - 1))
        others = tuple(replicas[:keep])
        args = (state.topic[p], state.size[p], others, state.bin[p], state.bout[p])
        assert choose_target(state, order, *args) == _reference(state, order, *args)
