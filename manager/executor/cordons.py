"""A broker's cordon as Kafka holds it (KIP-1066): its ``cordoned.log.dirs`` config, read
and written through the Admin API.

``*`` cordons every log directory, so the broker takes no new partition and no reassignment
onto it. A broker that does not know the config (Kafka before 4.3) would store it as an
unknown dynamic config and ignore it, so it is never written there: ``read`` says whether
the broker knows it (DescribeConfigs lists it, typed) before anything is written. Kafka
refuses the write (InvalidConfigurationException) while the cluster's metadata version is
older than cordons need; the refusal is the caller's to report.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

from kmedic.errors import KmedicError
from manager.executor.admin_calls import AdminCalls

CORDONED_LOG_DIRS = "cordoned.log.dirs"
EVERY_DIR = "*"


@dataclass(frozen=True)
class Cordon:
    """One broker's cordon as read: whether it knows the config at all, and its value
    ("" when unset; ``*`` when every log directory is cordoned)."""

    supported: bool
    value: str = ""

    @property
    def whole(self) -> bool:
        return self.value == EVERY_DIR


class BrokerCordons:
    def __init__(self, calls: AdminCalls) -> None:
        self._calls = calls

    def read(self, broker: int) -> Cordon:
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker), [CORDONED_LOG_DIRS])
        found = self._calls(
            lambda kp: kp.describe_configs([resource], config_filter="all"),
            f"read the cordon of broker {broker}",
        )
        entry = found.get("broker", {}).get(str(broker), {}).get(CORDONED_LOG_DIRS)
        if not isinstance(entry, dict) or entry.get("config_type") in (None, "UNKNOWN"):
            return Cordon(supported=False)
        return Cordon(supported=True, value=str(entry.get("value") or ""))

    def write(self, broker: int, cordoned: bool) -> None:
        """Cordon every log directory of ``broker`` (``*``), or remove its cordon."""
        op = (AlterConfigOp.SET, EVERY_DIR) if cordoned else (AlterConfigOp.DELETE, None)
        resource = ConfigResource(ConfigResourceType.BROKER, str(broker), {CORDONED_LOG_DIRS: op})
        what = f"{'cordon' if cordoned else 'uncordon'} broker {broker}"
        results = self._calls(
            lambda kp: kp.alter_configs([resource], incremental=True, raise_on_unknown=False),
            what,
        )
        outcome = results.get("broker", {}).get(str(broker))
        if outcome != "OK":
            raise KmedicError(f"cannot {what}: Kafka answered {outcome}")
