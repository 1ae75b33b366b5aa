"""Replication throttles kmedic owns: the record of what it set, and how one config value
changes when kmedic adds or removes its part (pure).

Kafka's throttles (KIP-73) are four configs: on a topic, ``leader/follower.replication.
throttled.replicas`` list ``partition:broker`` entries (or ``*``, every replica); on a broker,
``leader/follower.replication.throttled.rate`` cap the bytes per second. An operator may have
set any of them by hand. Ownership rules:

- kmedic owns an entry or a rate only if it added it: an entry already in the list, a ``*``
  list, or a rate already set belong to whoever set them, and are never changed or removed;
- removing kmedic's part of a list leaves the rest exactly as it was; a list left empty is
  deleted;
- a rate is removed only while it still holds the value kmedic set (an operator who changed it
  since made it theirs). When kmedic changes its own rate, the record stored before the change
  keeps the value it replaces too (``earlier``): a leader that crashes between storing the
  record and sending the change leaves the old value set, and its successor must still know
  that value as kmedic's. The next record written after the change drops it.

The record travels with the in-flight plan in ZooKeeper, written before the throttles are set,
so a successor removes what a crashed leader set and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
REPLICA_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
RATE_KEYS = (LEADER_RATE, FOLLOWER_RATE)
EVERY_REPLICA = "*"
FIELD = "throttles"

TopicKey = tuple[str, str]  # (topic, replicas config key)
BrokerKey = tuple[int, str]  # (broker id, rate config key)


@dataclass(frozen=True)
class ThrottleRecord:
    """The throttle settings kmedic set and has not removed yet."""

    replicas: Mapping[TopicKey, frozenset[str]] = field(default_factory=dict)
    rates: Mapping[BrokerKey, str] = field(default_factory=dict)
    # A rate kmedic is changing: the value it set before, still in effect until the change is
    # sent.
    earlier: Mapping[BrokerKey, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.replicas) or bool(self.rates)

    def union(self, other: ThrottleRecord) -> ThrottleRecord:
        """Everything either record owns (what to store before a change whose outcome is
        not known yet: a superset is safe, removing an absent entry changes nothing)."""
        replicas = dict(self.replicas)
        for key, entries in other.replicas.items():
            replicas[key] = replicas.get(key, frozenset()) | entries
        earlier = {k: v for k, v in self.earlier.items() if k not in other.rates}
        earlier.update(other.earlier)
        for rate_key, value in other.rates.items():
            before = self.rates.get(rate_key)
            if before is not None and before != value:
                earlier[rate_key] = before  # a changed value: either one may be in effect
        return ThrottleRecord(replicas, {**self.rates, **other.rates}, earlier)

    def to_field(self) -> dict[str, Any]:
        return {
            "replicas": [
                {"topic": t, "config": k, "entries": sort_entries(e)}
                for (t, k), e in sorted(self.replicas.items())
                if e
            ],
            "rates": [
                {
                    "broker": b,
                    "config": k,
                    "value": v,
                    **({"earlier": self.earlier[(b, k)]} if (b, k) in self.earlier else {}),
                }
                for (b, k), v in sorted(self.rates.items())
            ],
        }

    @classmethod
    def from_field(cls, raw: Any) -> ThrottleRecord:
        """The record a stored plan carries. Items that do not parse are dropped: what cannot
        be read cannot be proven kmedic's, so it is left alone."""
        if not isinstance(raw, Mapping):
            return cls()
        replicas: dict[TopicKey, frozenset[str]] = {}
        for item in _items(raw, "replicas"):
            if not isinstance(item, Mapping):
                continue
            topic, key, entries = item.get("topic"), item.get("config"), item.get("entries")
            if isinstance(topic, str) and key in REPLICA_KEYS and isinstance(entries, list):
                parsed = frozenset(e for e in entries if isinstance(e, str) and _is_entry(e))
                if parsed:
                    replicas[(topic, str(key))] = parsed
        rates: dict[BrokerKey, str] = {}
        earlier: dict[BrokerKey, str] = {}
        for item in _items(raw, "rates"):
            if not isinstance(item, Mapping):
                continue
            broker, key, value = item.get("broker"), item.get("config"), item.get("value")
            if (
                isinstance(broker, int)
                and not isinstance(broker, bool)
                and key in RATE_KEYS
                and isinstance(value, str)
                and value
            ):
                rates[(broker, str(key))] = value
                before = item.get("earlier")
                if isinstance(before, str) and before and before != value:
                    earlier[(broker, str(key))] = before
        return cls(replicas, rates, earlier)


def parse_entries(value: str | None) -> frozenset[str] | None:
    """A replicas config value as a set of entries; None for ``*`` (every replica)."""
    if value is None:
        return frozenset()
    items = [v.strip() for v in value.split(",") if v.strip()]
    if EVERY_REPLICA in items:
        return None
    return frozenset(items)


def sort_entries(entries: Iterable[str]) -> list[str]:
    def order(entry: str) -> tuple[int, int, str]:
        partition, _, broker = entry.partition(":")
        try:
            return (int(partition), int(broker), entry)
        except ValueError:
            return (1 << 62, 0, entry)

    return sorted(entries, key=order)


@dataclass(frozen=True)
class ListChange:
    """One replicas config after kmedic's part changed: its new value (None: delete the
    config), whether it differs from what is set, and the entries kmedic owns afterwards."""

    value: str | None
    changed: bool
    owned: frozenset[str]


def change_list(current: str | None, owned: frozenset[str], wanted: frozenset[str]) -> ListChange:
    """The list ``current`` after kmedic's entries become ``wanted`` (they were ``owned``)."""
    present = parse_entries(current)
    if present is None:  # "*": someone throttles every replica already; nothing to add
        return ListChange(current, False, frozenset())
    others = present - owned
    mine = wanted - others
    entries = others | mine
    value = ",".join(sort_entries(entries)) if entries else None
    return ListChange(value, entries != present, frozenset(mine))


@dataclass(frozen=True)
class RateChange:
    """One rate config after kmedic's wish for it: the value to set (None: delete it), whether
    to send anything, and the value kmedic owns afterwards (None: not kmedic's)."""

    value: str | None
    changed: bool
    owned: str | None


def change_rate(
    current: str | None, owned: str | None, wanted: str | None, earlier: str | None = None
) -> RateChange:
    """The rate ``current`` once kmedic wants ``wanted`` (None: no throttle of its own),
    having set ``owned`` before (None: nothing), or ``earlier`` if its change to ``owned`` was
    stored but maybe never sent."""
    current = current or None
    if owned is not None and current != owned and (earlier is None or current != earlier):
        owned = None  # someone else set it since: theirs now
    if current is not None and owned is None:
        return RateChange(current, False, None)  # someone else's rate: left as it is
    if wanted is None:
        return RateChange(None, current is not None, None)
    return RateChange(wanted, current != wanted, wanted)


def _items(raw: Mapping[str, Any], key: str) -> list[Any]:
    items = raw.get(key)
    return items if isinstance(items, list) else []


def _is_entry(entry: str) -> bool:
    partition, sep, broker = entry.partition(":")
    return bool(sep) and partition.isdigit() and broker.isdigit()
