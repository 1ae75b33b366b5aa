"""The brokers' static replication settings kmedic's throttled copies rely on, as read from
each broker (DescribeConfigs), and the rule that names a broker whose settings are not them.

docs/executor.md says why each matters ("Kafka's quota window", "A move's end"): a throttle
measured over Kafka's 11 s window lets a copy burst at link speed in front of the writes
replicated through the same link; a follower refused a fetch at a move's end waits
``replica.fetch.backoff.ms`` (1 s by default) and the partition's acks=all writes wait with
it; an idle follower's fetch waits ``replica.fetch.wait.max.ms`` (500 ms by default) for data.
Each is static (a rolling restart): kmedic cannot set them, so it names the brokers that lack
them - on the status page, in readiness, as ``kmedic_broker_replication_setting_off`` and its
warning - and measures its heal figures with and without them (docs/bench.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from manager.model.frozen import Frozen


class ReplicationSettings(Frozen):
    """What a broker was read to have (None: Kafka gave no value)."""

    quota_window_s: float | None = None  # replication.quota.window.num x .size.seconds
    fetch_backoff_ms: int | None = None  # replica.fetch.backoff.ms
    fetch_wait_ms: int | None = None  # replica.fetch.wait.max.ms


@dataclass(frozen=True)
class Wanted:
    setting: str  # the metric's label and the sentence's name
    field: str  # of ReplicationSettings
    at_most: float
    unit: str
    set_as: str  # what an operator writes in server.properties


WANTED = (
    Wanted(
        "replication.quota.window",
        "quota_window_s",
        1.0,
        "s",
        "replication.quota.window.num=1 (with replication.quota.window.size.seconds=1)",
    ),
    Wanted(
        "replica.fetch.backoff.ms", "fetch_backoff_ms", 200, "ms", "replica.fetch.backoff.ms=100"
    ),
    Wanted(
        "replica.fetch.wait.max.ms", "fetch_wait_ms", 200, "ms", "replica.fetch.wait.max.ms=100"
    ),
)


@dataclass(frozen=True)
class SettingOff:
    broker: int
    setting: str
    value: float
    wanted: Wanted

    def sentence(self) -> str:
        w = self.wanted
        return (
            f"broker {self.broker}: {w.setting} {self.value:g} {w.unit}, over the {w.at_most:g} "
            f"{w.unit} kmedic's throttled copies are measured at (set {w.set_as}; a rolling "
            "restart)"
        )


def settings_off(broker: int, settings: ReplicationSettings | None) -> list[SettingOff]:
    """Each setting of ``broker`` over what kmedic wants; none when nothing was read."""
    if settings is None:
        return []
    found = []
    for w in WANTED:
        value = getattr(settings, w.field)
        if value is not None and value > w.at_most:
            found.append(SettingOff(broker, w.setting, float(value), w))
    return found
