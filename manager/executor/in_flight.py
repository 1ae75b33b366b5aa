"""What becomes of a move in flight, decided from one step's read alone (pure).

A move in flight is one whose reassignment Kafka took. At each step:

- Kafka still lists its reassignment: with a destination no longer alive it **fails** and is
  cancelled (the planner replans it), else it **runs**;
- Kafka lists none and the partition's replicas are the target, in its order: **in place**
  (the preferred leader election follows; a reorder, a leadership move, shows the same replica
  set before it is applied, so the order counts);
- else its reassignment **ended** with other replicas: the controller says it ended, and broker
  metadata may lag behind the controller, so the executor fails it only once this has read so
  for ``METADATA_SETTLE_S``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from manager.executor.move_state import ClusterView
from manager.model.moves import Move

Fate = Literal["fail", "run", "in_place", "ended"]


@dataclass(frozen=True)
class Verdict:
    fate: Fate
    reason: str = ""  # why it fails, or how it ended


def track(move: Move, view: ClusterView) -> Verdict:
    if move.tp in view.ongoing:
        dead = [b for b in move.target if b not in view.live_brokers]
        if dead:
            return Verdict("fail", f"destination broker {dead[0]} is not alive")
        return Verdict("run")
    current = view.replicas.get(move.tp)
    if current == move.target:
        return Verdict("in_place")
    return Verdict("ended", f"reassignment ended with replicas {list(current or ())}")
