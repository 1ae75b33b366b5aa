"""The leader's side of the drains' cordons (the rule: manager.model.cordons): Kafka's cordon
of each broker a drain or decommission named, set and removed as the rule says, each change
audited once.

- Only a leader that writes (act mode, a quorum with a leader) changes a cordon, before it
  plans: a broker a fill takes back is uncordoned before the fill's moves reach it (Kafka
  refuses a reassignment onto a cordoned broker).
- A broker is read (DescribeConfigs) when its intent, or whether it is alive, changed since
  this leader last settled it, and once after each takeover; a stopped broker is left until
  it is back (its config is written through it).
- kmedic writes ``*`` (every log directory) and removes only the ``*`` it wrote: each one is
  kept in the cordon ledger (manager.coordination.cordon_ledger), read once after a takeover.
  A cordon set by hand - of some log directories, or ``*`` set before the drain - is left as
  it is when the drain ends, is cancelled or a fill takes the broker back, and said once.
- A broker that does not know the config (Kafka before 4.3) is never written; the leader
  says once that it cannot cordon it. kmedic's plans send it nothing all the same, and a
  partition created on it after its drain is done is moved off by the drain, served again
  (manager.daemon.requests).
- A failed read or write is audited once per cause and tried again the next cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kmedic.errors import KmedicError, LeaseEnded
from kmedic.logging import get_logger
from manager.coordination.cordon_ledger import LedgerEntry, entry_now
from manager.daemon.audit_trail import AuditTrail
from manager.daemon.ports import Cordons, Ledger
from manager.executor.cordons import CORDONED_LOG_DIRS, Cordon
from manager.model.cordons import CordonIntent, Request, cordon_intents

log = get_logger(__name__)


class CordonKeeper:
    def __init__(
        self,
        cordons: Cordons,
        ledger: Ledger,
        trail: AuditTrail,
        may_act: Callable[[], bool] = lambda: True,
    ) -> None:
        self._cordons = cordons
        self._ledger = ledger
        self._trail = trail
        self._may_act = may_act  # False once this instance's lease ran out
        self._epoch: int | None = None
        self._settled: dict[int, tuple[bool, bool]] = {}  # broker: (held, alive) settled
        self._told: set[tuple[int, str]] = set()  # (broker, what) said once
        self.owned: dict[int, LedgerEntry] | None = None  # the ``*`` kmedic wrote; None: unread

    def mine(self, epoch: int) -> dict[int, LedgerEntry] | None:
        """The cordons kmedic wrote, read once after each takeover (None: unreadable now)."""
        if epoch != self._epoch:  # a takeover: read every broker and the ledger again
            self._epoch, self._settled, self.owned = epoch, {}, None
        if self.owned is None:
            try:
                self.owned = self._ledger.load()
            except KmedicError as exc:
                said = f"cannot read the cordons kmedic wrote: {exc}; no cordon is changed"
                if (-1, said) not in self._told:
                    self._told.add((-1, said))
                    self._trail.record("action_failed", said)
        return self.owned

    def follow(self, requests: Iterable[Request], alive: Iterable[int], epoch: int) -> None:
        if self.mine(epoch) is None:
            return
        live = frozenset(alive)
        for broker, intent in cordon_intents(requests).items():
            key = (intent.held, broker in live)
            if broker not in live or self._settled.get(broker) == key:
                continue
            try:
                self._settle(intent, self._cordons.read(broker))
            except LeaseEnded as exc:  # no longer this instance's to do: the next leader does it
                log.info("cordon_left_to_the_next_leader", broker=broker, why=str(exc))
                return
            except KmedicError as exc:
                if not self._may_act():  # its lease ran out meanwhile: the next leader's to tell
                    log.info("cordon_left_to_the_next_leader", broker=broker, why=str(exc))
                    return
                self._once(
                    broker,
                    "action_failed",
                    f"cannot set the cordon of broker {broker} ({intent.said}): {exc}; the next "
                    "cycle tries again",
                    intent,
                )
                continue
            self._settled[broker] = key

    def _settle(self, intent: CordonIntent, now: Cordon) -> None:
        broker = intent.broker
        owned = self.owned if self.owned is not None else {}
        if broker in owned and not now.whole:
            # Removed by someone else (or never set): the next ``*`` there is not kmedic's.
            self._save({b: e for b, e in owned.items() if b != broker})
        if not now.supported:
            if intent.held:
                self._once(
                    broker,
                    "decision",
                    f"broker {broker} cannot be cordoned: it does not know {CORDONED_LOG_DIRS} "
                    "(KIP-1066, Kafka 4.3 or newer); kmedic's plans send it nothing, and a "
                    f"partition created on it is moved off ({intent.said})",
                    intent,
                )
            return
        mine = broker in (self.owned or {})
        if intent.held and not now.value:
            # The ledger first: a cordon written and not recorded would never be removed.
            self._save({**(self.owned or {}), broker: entry_now(intent.request)})
            self._cordons.write(broker, True)
            self._record(
                "action_completed",
                f"cordoned broker {broker}: Kafka places no new partition on it ({intent.said})",
                intent,
            )
        elif not intent.held and now.whole and mine:
            self._cordons.write(broker, False)
            self._save({b: e for b, e in (self.owned or {}).items() if b != broker})
            self._record("action_completed", f"uncordoned broker {broker}: {intent.said}", intent)
        elif not intent.held and now.whole:
            self._once(
                broker,
                "decision",
                f"broker {broker} stays cordoned ({CORDONED_LOG_DIRS}=*): kmedic did not set "
                f"that cordon, so it leaves it to whoever did ({intent.said})",
                intent,
            )
        elif intent.held and not mine:
            self._once(
                broker,
                "decision",
                f"broker {broker} has {CORDONED_LOG_DIRS}={now.value} set by hand: kmedic "
                f"leaves it as it is (and never removes it), and its plans send the broker "
                f"nothing ({intent.said})",
                intent,
            )

    def _save(self, owned: dict[int, LedgerEntry]) -> None:
        self._ledger.save(owned)
        self.owned = owned

    def by_whom(self, broker: int) -> str:
        """Who set a cordoned broker's cordon, as far as kmedic knows: its own (the request
        it was set for) or not."""
        entry = (self.owned or {}).get(broker)
        if entry is None:
            return "not kmedic (an operator, or Kafka's config)"
        return f"kmedic ({entry.request or 'a drain'})"

    def _once(self, broker: int, kind: str, said: str, intent: CordonIntent) -> None:
        if (broker, said) not in self._told:
            self._told.add((broker, said))
            self._record(kind, said, intent)

    def _record(self, kind: str, said: str, intent: CordonIntent) -> None:
        details = {"broker": intent.broker, "cordoned": intent.held, "request": intent.request}
        self._trail.record(kind, said, details=details)
