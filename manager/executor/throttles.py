"""Replication throttles of the executor's moves, applied through incremental config changes.

Topic configs (``leader/follower.replication.throttled.replicas``) name the replicas being
copied; broker configs (``leader/follower.replication.throttled.rate``) cap the bytes per second.
Only the differences from what was last applied are sent. A broker config can only be changed on
that broker: while it is down its change waits and is retried on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType, KafkaAdminClient

from kmedic.errors import KmedicError
from kmedic.logging import get_logger
from manager.executor.batches import ThrottleTargets

log = get_logger(__name__)

LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"

AdminCall = Callable[[Callable[[KafkaAdminClient], Any], str], Any]


class Throttles:
    def __init__(self, bytes_per_s: int | None, admin_call: AdminCall) -> None:
        self.bytes_per_s = bytes_per_s
        self._call = admin_call
        self._applied = ThrottleTargets({}, {}, frozenset())

    def throttled_brokers(self) -> set[int]:
        return set(self._applied.brokers)

    def apply(self, targets: ThrottleTargets, live_brokers: frozenset[int]) -> None:
        """Make the cluster's throttles match ``targets`` (no-op when throttling is off)."""
        if self.bytes_per_s is None:
            return
        old = self._applied
        topic_changes = []
        for topic in sorted(set(old.leader_replicas) | set(targets.leader_replicas)):
            leader = targets.leader_replicas.get(topic)
            follower = targets.follower_replicas.get(topic)
            if (old.leader_replicas.get(topic), old.follower_replicas.get(topic)) == (
                leader,
                follower,
            ):
                continue
            wanted = {
                LEADER_REPLICAS: ",".join(leader) if leader else None,
                FOLLOWER_REPLICAS: ",".join(follower) if follower else None,
            }
            topic_changes.append(_resource(ConfigResourceType.TOPIC, topic, wanted))
        self._alter(topic_changes)
        rate = str(self.bytes_per_s)
        throttled = set(old.brokers)
        for broker in sorted(old.brokers ^ targets.brokers):
            if broker not in live_brokers:
                continue  # retried on a later call, once the broker is back
            value = rate if broker in targets.brokers else None
            change = {LEADER_RATE: value, FOLLOWER_RATE: value}
            try:
                self._alter([_resource(ConfigResourceType.BROKER, str(broker), change)])
            except KmedicError as exc:
                log.warning("broker_throttle_change_failed", broker=broker, error=str(exc))
                continue
            if value is None:
                throttled.discard(broker)
            else:
                throttled.add(broker)
        new = ThrottleTargets(
            targets.leader_replicas, targets.follower_replicas, frozenset(throttled)
        )
        if new != old:
            log.info(
                "throttles_applied", topics=sorted(new.leader_replicas), brokers=sorted(throttled)
            )
        self._applied = new

    def clear(self, topics: Iterable[str], brokers: Iterable[int]) -> None:
        """Remove every throttle config from these topics and brokers."""
        self._alter(
            [
                _resource(
                    ConfigResourceType.TOPIC, t, {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None}
                )
                for t in topics
            ]
            + [
                _resource(
                    ConfigResourceType.BROKER, str(b), {LEADER_RATE: None, FOLLOWER_RATE: None}
                )
                for b in brokers
            ]
        )

    def _alter(self, resources: list[ConfigResource]) -> None:
        if not resources:
            return
        # raise_on_unknown=False: the throttle rates are not listed among describable configs.
        results = self._call(
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


def _resource(kind: Any, name: str, values: dict[str, str | None]) -> ConfigResource:
    configs = {
        key: (AlterConfigOp.SET, value) if value is not None else (AlterConfigOp.DELETE, None)
        for key, value in values.items()
    }
    return ConfigResource(kind, name, configs=configs)
