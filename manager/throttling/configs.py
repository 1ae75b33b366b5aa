"""Replication throttles of the executor's moves, set and removed through incremental config
changes, touching only what kmedic owns (the rules: manager.throttling.ownership).

A change is made in two steps so that its ownership can be stored first: ``prepare`` reads the
configs it would touch and computes their new values and what kmedic owns afterwards;
``commit`` sends them. Only configs whose wanted state changed are read or sent. A broker
config can only be changed on that broker: while it is down its change waits and is retried
on a later call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

from kmedic.errors import KmedicError
from kmedic.logging import get_logger
from manager.throttling.ownership import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    RATE_KEYS,
    BrokerKey,
    ThrottleRecord,
    TopicKey,
    change_list,
    change_rate,
)
from manager.throttling.targets import ThrottleTargets

log = get_logger(__name__)

AdminCall = Callable[[Callable[[KafkaAdminClient], Any], str], Any]


@dataclass(frozen=True)
class ThrottleChange:
    """Config values to send (None: delete), and the state once they are sent."""

    topics: dict[str, dict[str, str | None]] = field(default_factory=dict)
    brokers: dict[int, dict[str, str | None]] = field(default_factory=dict)
    owned: ThrottleRecord = field(default_factory=ThrottleRecord)
    wanted_replicas: dict[TopicKey, frozenset[str]] = field(default_factory=dict)
    wanted_rates: dict[BrokerKey, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.topics) or bool(self.brokers)


class Throttles:
    """``admin_call`` reaches the cluster (retried); ``broker_call`` one broker's own configs,
    which only that broker answers: tried once (default: ``admin_call``)."""

    def __init__(
        self, enabled: bool, admin_call: AdminCall, broker_call: AdminCall | None = None
    ) -> None:
        self.enabled = enabled
        self._call = admin_call
        self._broker_call = broker_call or admin_call
        self._owned = ThrottleRecord()
        self._wanted_replicas: dict[TopicKey, frozenset[str]] = {}
        self._wanted_rates: dict[BrokerKey, str] = {}

    def owned(self) -> ThrottleRecord:
        return self._owned

    def wanted_rates(self) -> dict[BrokerKey, str]:
        """The rates kmedic last set (or, for a broker that is down, wants set)."""
        return dict(self._wanted_rates)

    def adopt(self, record: ThrottleRecord) -> None:
        """Take over what a predecessor recorded as kmedic's (removed once no move needs it)."""
        self._owned = self._owned.union(record)

    def prepare(
        self,
        targets: ThrottleTargets,
        live_brokers: frozenset[int],
        wanted_rates: Mapping[BrokerKey, str],
    ) -> ThrottleChange:
        """What it takes for the cluster's throttles to match ``targets`` at ``wanted_rates``
        (a rate per broker taking part and config key), kmedic's part only (with throttling
        off, both are ignored and what kmedic owns is removed)."""
        if not self.enabled:
            targets, wanted_rates = ThrottleTargets({}, {}, frozenset()), {}
        replicas = _wanted_replicas(targets)
        rates = dict(wanted_rates)
        owned = self._owned
        topic_keys = sorted(
            k
            for k in set(replicas) | set(self._wanted_replicas) | set(owned.replicas)
            if replicas.get(k) != self._wanted_replicas.get(k)
            or (k in owned.replicas and k not in replicas)
        )
        broker_keys = sorted(
            k
            for k in set(rates) | set(self._wanted_rates) | set(owned.rates)
            if (rates.get(k) != self._wanted_rates.get(k) or (k in owned.rates and k not in rates))
            and k[0] in live_brokers  # the others wait until the broker is back
        )
        if not topic_keys and not broker_keys:
            return ThrottleChange(
                owned=owned, wanted_replicas=replicas, wanted_rates=self._kept(rates, live_brokers)
            )
        current = self._read_topics({t for t, _ in topic_keys})
        unread: set[int] = set()
        for broker in sorted({b for b, _ in broker_keys}):
            found = self._read_broker(broker)
            if found is None:
                unread.add(broker)
            else:
                current[("broker", str(broker))] = found
        if unread:  # its change waits, as a down broker's does
            live_brokers = live_brokers - unread
            broker_keys = [k for k in broker_keys if k[0] not in unread]
        new_replicas = dict(owned.replicas)
        topics: dict[str, dict[str, str | None]] = {}
        for topic, key in topic_keys:
            change = change_list(
                current.get(("topic", topic), {}).get(key),
                owned.replicas.get((topic, key), frozenset()),
                replicas.get((topic, key), frozenset()),
            )
            if change.changed:
                topics.setdefault(topic, {})[key] = change.value
            if change.owned:
                new_replicas[(topic, key)] = change.owned
            else:
                new_replicas.pop((topic, key), None)
        new_rates = dict(owned.rates)
        brokers: dict[int, dict[str, str | None]] = {}
        for broker, key in broker_keys:
            rate_change = change_rate(
                current.get(("broker", str(broker)), {}).get(key),
                owned.rates.get((broker, key)),
                rates.get((broker, key)),
                owned.earlier.get((broker, key)),
            )
            if rate_change.changed:
                brokers.setdefault(broker, {})[key] = rate_change.value
            if rate_change.owned is not None:
                new_rates[(broker, key)] = rate_change.owned
            else:
                new_rates.pop((broker, key), None)
        return ThrottleChange(
            topics,
            brokers,
            ThrottleRecord(new_replicas, new_rates),
            replicas,
            self._kept(rates, live_brokers),
        )

    def commit(self, change: ThrottleChange) -> None:
        """Send a prepared change. Topic configs go in one request (a failure raises, nothing
        is taken as changed); each broker's in its own (a failure is logged, and that broker's
        part is retried on a later call)."""
        self._alter(
            [_resource(ConfigResourceType.TOPIC, t, values) for t, values in change.topics.items()]
        )
        owned_rates = dict(change.owned.rates)
        wanted_rates = dict(change.wanted_rates)
        earlier: dict[BrokerKey, str] = {}
        for broker, values in sorted(change.brokers.items()):
            try:  # only that broker answers: tried once, sent again on a later call
                self._alter(
                    [_resource(ConfigResourceType.BROKER, str(broker), values)], self._broker_call
                )
            except KmedicError as exc:
                log.warning("broker_throttle_change_failed", broker=broker, error=str(exc))
                for key in RATE_KEYS:
                    # The change may still take effect (a broker cut off from the controllers
                    # forwards it once its link is back): a rate it set stays kmedic's, with
                    # the value before as another that may be in effect; the change is sent
                    # again on a later call.
                    tried, before = values.get(key), self._owned.rates.get((broker, key))
                    _restore(owned_rates, self._owned.rates, (broker, key))
                    if tried is not None:
                        owned_rates[(broker, key)] = tried
                        if before is not None and before != tried:
                            earlier[(broker, key)] = before
                    _restore(wanted_rates, self._wanted_rates, (broker, key))
        new = ThrottleRecord(change.owned.replicas, owned_rates, earlier)
        if change:
            log.info(
                "throttles_changed",
                topics=sorted(change.topics),
                brokers=sorted(change.brokers),
                owned_topics=sorted({t for t, _ in new.replicas}),
                owned_brokers=sorted({b for b, _ in new.rates}),
            )
        self._owned = new
        self._wanted_replicas = dict(change.wanted_replicas)
        self._wanted_rates = wanted_rates

    def release(self, live_brokers: frozenset[int]) -> ThrottleRecord:
        """Remove every throttle kmedic owns; returns what is left (rates of brokers that are
        down)."""
        self.commit(self.prepare(ThrottleTargets({}, {}, frozenset()), live_brokers, {}))
        return self._owned

    def _kept(self, rates: dict[BrokerKey, str], live: frozenset[int]) -> dict[BrokerKey, str]:
        """The wanted rates, as last committed for brokers that are down."""
        kept = {k: v for k, v in rates.items() if k[0] in live}
        kept.update({k: v for k, v in self._wanted_rates.items() if k[0] not in live})
        return kept

    def _read_topics(self, topics: set[str]) -> dict[tuple[str, str], dict[str, str]]:
        """The topics' current throttle values, by (``topic``, name)."""
        if not topics:
            return {}
        resources = [
            ConfigResource(ConfigResourceType.TOPIC, t, configs=None) for t in sorted(topics)
        ]
        found = self._call(
            lambda kp: kp.describe_configs(resources, config_filter="modified"),
            "read throttle configs",
        )
        return _throttle_values(found)

    def _read_broker(self, broker: int) -> dict[str, str] | None:
        """The broker's current throttle values, or None if it did not answer. Kafka answers a
        broker's configs from that broker alone, so each is asked on its own: a broker cut off
        from the manager (alive to the others) fails its own read, not the step."""
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker), configs=None)
        try:
            found = self._broker_call(
                lambda kp: kp.describe_configs([resource], config_filter="modified"),
                f"read broker {broker}'s throttle configs",
            )
        except KmedicError as exc:
            log.warning("broker_throttle_unreadable", broker=broker, error=str(exc))
            return None
        return _throttle_values(found).get(("broker", str(broker)), {})

    def _alter(self, resources: list[ConfigResource], call: AdminCall | None = None) -> None:
        if not resources:
            return
        # raise_on_unknown=False: the throttle rates are not listed among describable configs.
        results = (call or self._call)(
            lambda kp: kp.alter_configs(resources, incremental=True, raise_on_unknown=False),
            "change throttle configs",
        )
        failed = {
            f"{kind} {name}": outcome
            for kind, by_name in results.items()
            for name, outcome in by_name.items()
            if outcome != "OK"
        }
        if failed:
            raise KmedicError(f"cannot change throttle configs: {failed}")


_KEYS = frozenset((LEADER_REPLICAS, FOLLOWER_REPLICAS, LEADER_RATE, FOLLOWER_RATE))


def _throttle_values(found: Mapping[Any, Any]) -> dict[tuple[str, str], dict[str, str]]:
    """A describe_configs answer's throttle values, by (``topic``|``broker``, name)."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for kind, by_name in found.items():
        for name, entries in by_name.items():
            out[(str(kind).lower(), str(name))] = {
                key: str(item["value"])
                for key, item in entries.items()
                if key in _KEYS and isinstance(item, dict) and item.get("value")
            }
    return out


def _wanted_replicas(targets: ThrottleTargets) -> dict[TopicKey, frozenset[str]]:
    wanted: dict[TopicKey, frozenset[str]] = {}
    for key, by_topic in (
        (LEADER_REPLICAS, targets.leader_replicas),
        (FOLLOWER_REPLICAS, targets.follower_replicas),
    ):
        for topic, entries in by_topic.items():
            if entries:
                wanted[(topic, key)] = frozenset(entries)
    return wanted


def _restore(target: dict[BrokerKey, str], before: Any, key: BrokerKey) -> None:
    if key in before:
        target[key] = before[key]
    else:
        target.pop(key, None)


def _resource(kind: Any, name: str, values: dict[str, str | None]) -> ConfigResource:
    # The only configs kmedic ever writes. Above all never min.insync.replicas: lowering it
    # in an incident acknowledges writes held by fewer copies than the topic asked for, and
    # clears the topic's eligible leader replicas (KIP-966).
    foreign = sorted(set(values) - _KEYS)
    if foreign:
        raise KmedicError(
            f"refusing to change {', '.join(foreign)} of {name}: kmedic writes only the "
            "replication throttle configs"
        )
    configs = {
        key: (AlterConfigOp.SET, value) if value is not None else (AlterConfigOp.DELETE, None)
        for key, value in values.items()
    }
    return ConfigResource(kind, name, configs=configs)
