"""Which brokers a drain holds cordoned: the one home of that rule.

A cordoned broker takes no new replica: Kafka (KIP-1066, 4.3+: ``cordoned.log.dirs=*`` on the
broker) places no new partition on it and refuses reassignments onto it, and kmedic's planner
sends it nothing. kmedic cordons the brokers of the drains and decommissions it carries out:

- a broker's cordon follows the newest drain, decommission or fill request naming it that
  was not ``cancelled`` or ``failed`` (a cancelled or failed request takes back what it
  asked, and the one before it holds again);
- a drain holds its brokers cordoned while it runs and after it is done (or ``partial``): a
  drained broker stays empty until an operator asks for load on it with ``kmedic fill``;
- a decommission holds them until it is done: by then each broker is stopped and
  unregistered, and one that registers again with that id is a new broker;
- a fill holds none: it asks for load on its brokers.

kmedic only ever changes the cordon of a broker some drain or decommission named; how it
writes it (and leaves a cordon set by hand alone) is ``manager.daemon.cordoning``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

CORDONING_KINDS = frozenset({"drain", "decommission"})
_KINDS = CORDONING_KINDS | {"fill"}
_TAKEN_BACK = frozenset({"cancelled", "failed"})


class Request(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def brokers(self) -> tuple[int, ...]: ...

    @property
    def state(self) -> str: ...

    @property
    def created_ms(self) -> int: ...


@dataclass(frozen=True)
class CordonIntent:
    """Per broker some drain or decommission named: whether it is held cordoned, and the
    request that decides it (None: every request naming it was cancelled or failed)."""

    broker: int
    held: bool
    request: str | None
    said: str  # why, as the audit record says it

    @property
    def sentence(self) -> str:
        return f"broker {self.broker} {'stays cordoned' if self.held else 'is not'}: {self.said}"


def cordon_intents(requests: Iterable[Request]) -> dict[int, CordonIntent]:
    """The intent for every broker a drain or decommission ever named (others: none)."""
    found = [r for r in requests if r.kind in _KINDS]
    named = {b for r in found if r.kind in CORDONING_KINDS for b in r.brokers}
    out: dict[int, CordonIntent] = {}
    for broker in sorted(named):
        standing = [r for r in found if broker in r.brokers and r.state not in _TAKEN_BACK]
        if not standing:
            out[broker] = CordonIntent(
                broker, False, None, "every drain or decommission naming it was cancelled or failed"
            )
            continue
        newest = max(standing, key=lambda r: (r.created_ms, r.id))
        what = f"request {newest.id} ({newest.kind}) is {newest.state}"
        if newest.kind == "fill":
            out[broker] = CordonIntent(broker, False, newest.id, f"{what}: it asks for load on it")
        elif newest.kind == "decommission" and newest.state == "done":
            said = f"{what}: it was unregistered, and a broker that registers again is new"
            out[broker] = CordonIntent(broker, False, newest.id, said)
        else:
            out[broker] = CordonIntent(broker, True, newest.id, what)
    return out


def held_cordoned(requests: Iterable[Request]) -> frozenset[int]:
    """The brokers a drain or decommission holds cordoned."""
    return frozenset(b for b, i in cordon_intents(requests).items() if i.held)
