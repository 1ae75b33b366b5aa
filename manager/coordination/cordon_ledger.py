"""The cordons kmedic wrote: ``<root>/<cluster>/manager/cordons`` holds
``{"brokers": {"3": {"request": "req-0000000007", "set_ms": ...}}}``, one entry per broker
whose ``cordoned.log.dirs=*`` the leader set for a drain or decommission and has not removed.

kmedic removes a cordon only when this ledger says it wrote it: an operator's ``*`` set before
a drain (or after kmedic removed its own) is theirs, and a fill or a cancel leaves it. The
leader reads the ledger once when it takes over and keeps it (it is the only writer); every
change is one write fenced by the epoch, as the plan's are.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass

from kmedic.errors import KmedicError
from manager.coordination.fenced import FencedSession
from manager.coordination.znodes import CoordinationError


@dataclass(frozen=True)
class LedgerEntry:
    request: str | None  # the drain or decommission it was set for
    set_ms: int


class CordonLedger:
    def __init__(self, coordinator: FencedSession, base: str) -> None:
        self._coordinator = coordinator
        self.path = f"{base}/cordons"
        self._version: int | None = None  # None: no znode

    def load(self) -> dict[int, LedgerEntry]:
        """The cordons kmedic wrote and has not removed, as stored."""
        found = self._coordinator.get_json(self.path)
        if found is None:
            self._version = None
            return {}
        doc, stat = found
        self._version = int(stat.version)
        try:
            return {
                int(broker): LedgerEntry(entry.get("request"), int(entry.get("set_ms", 0)))
                for broker, entry in dict(doc.get("brokers", {})).items()
            }
        except (TypeError, ValueError, AttributeError) as exc:
            raise CoordinationError(f"{self.path} holds no valid cordon ledger: {exc}") from exc

    def save(self, owned: Mapping[int, LedgerEntry]) -> None:
        """Store ``owned`` in place of what was loaded (compare-and-set, fenced)."""
        doc = {
            "brokers": {
                str(b): {"request": e.request, "set_ms": e.set_ms} for b, e in sorted(owned.items())
            }
        }
        payload = json.dumps(doc, sort_keys=True).encode()
        version = self._version
        results = self._coordinator.fenced_commit(
            lambda tx: (
                tx.create(self.path, payload)
                if version is None
                else tx.set_data(self.path, payload, version=version)
            ),
            "write the cordon ledger",
        )
        if isinstance(results[1], Exception):
            # Changed underneath (a write whose answer was lost): the next write replaces it
            # whatever its version (ZooKeeper's -1), still fenced by the epoch check.
            self._version = -1
            raise KmedicError(f"the cordon ledger {self.path} changed underneath")
        self._version = 0 if version is None else int(results[1].version)


def entry_now(request: str | None) -> LedgerEntry:
    return LedgerEntry(request, int(time.time() * 1000))
