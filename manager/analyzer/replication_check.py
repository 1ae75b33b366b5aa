"""The live brokers whose static replication settings are not those kmedic's throttled
copies are measured at (the rule: manager.model.replication_settings.settings_off). Pure: the
metric, the status page and the readiness section read this one list."""

from __future__ import annotations

from manager.model.replication_settings import SettingOff, settings_off
from manager.model.snapshot import Snapshot


def replication_settings_off(snap: Snapshot) -> list[SettingOff]:
    """Every live broker's settings off what kmedic wants, by broker."""
    return [o for b in snap.brokers if b.alive for o in settings_off(b.id, b.replication)]
