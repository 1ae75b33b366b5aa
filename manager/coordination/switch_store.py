"""The goal switches, switched at run time: ``<root>/<cluster>/manager/switches`` holds
``{"goals": {NAME: true|false}, "by", "set_ms", "why"}``, written by ``kmedic switches`` or
the HTTP API on a plain session.

The rules, as for the mode (manager.coordination.mode_store):

- Without the znode every instance judges by its config's ``policy.goals``. With it, each
  switch it names replaces the config's; a switch it does not name stays as configured.
- Every instance reads the znode in its cycle's one ZooKeeper read, so a switch reaches the
  leader at its next cycle and survives a failover; the leader audits each change it sees.
- A write names every switch it sets (on, off, or back to the config's) and keeps the ones
  set before (read, merge, compare-and-set on the znode's version), so two operators
  switching two goals both win.
- A name that is not a goal is refused before anything is written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, KazooException, NodeExistsError
from kazoo.handlers.threading import KazooTimeoutError
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kmedic.errors import KmedicError
from manager.coordination.znodes import CoordinationError, parse_document, read_znode
from manager.model.policy import GoalSwitches, Policy

GOALS: tuple[str, ...] = tuple(GoalSwitches.model_fields)


class SwitchRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    goals: dict[str, bool] = Field(default_factory=dict)
    by: str = ""
    set_ms: int = Field(default=0, ge=0)
    why: str = ""

    @field_validator("goals")
    @classmethod
    def _known(cls, goals: dict[str, bool]) -> dict[str, bool]:
        unknown = sorted(set(goals) - set(GOALS))
        if unknown:
            raise ValueError(f"not a goal: {', '.join(unknown)} (goals: {', '.join(GOALS)})")
        return goals

    def sentence(self) -> str:
        said = f": {self.why}" if self.why else ""
        shown = ", ".join(f"{n} {'on' if v else 'off'}" for n, v in sorted(self.goals.items()))
        return f"{shown or 'none'}, set by {self.by or 'an operator'}{said}"


def switches_path(base: str) -> str:
    return f"{base}/switches"


def parse_switches(data: bytes, path: str) -> SwitchRecord:
    """The switches znode's record; anything else there is a CoordinationError naming it."""
    return parse_document(SwitchRecord, data, path, "switches")


def switched(policy: Policy, stored: SwitchRecord | None) -> Policy:
    """``policy`` with the stored switches in place of its own."""
    if stored is None or not stored.goals:
        return policy
    goals = policy.goals.model_copy(update=stored.goals)
    return policy.model_copy(update={"goals": goals})


def read_switches(client: KazooClient, base: str) -> SwitchRecord | None:
    path = switches_path(base)
    found = read_znode(client, path)
    return None if found is None else parse_switches(found[0], path)


def set_switches(
    client: KazooClient, base: str, goals: Mapping[str, bool | None], by: str, why: str
) -> SwitchRecord:
    """Store ``goals`` over the switches set before (None: back to the config's); returns the
    record as stored."""
    unknown = sorted(set(goals) - set(GOALS))
    if unknown:
        raise KmedicError(f"not a goal: {', '.join(unknown)} (goals: {', '.join(GOALS)})")
    if not goals:
        raise KmedicError(f"name at least one goal to switch (goals: {', '.join(GOALS)})")
    path = switches_path(base)
    for _ in range(5):
        found = read_znode(client, path)
        merged = {} if found is None else dict(parse_switches(found[0], path).goals)
        for name, value in goals.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
        record = SwitchRecord(goals=merged, by=by, set_ms=int(time.time() * 1000), why=why)
        payload = json.dumps(record.model_dump(), sort_keys=True).encode()
        try:
            if found is None:
                client.create(path, payload, makepath=True)
            else:
                client.set(path, payload, version=found[1].version)
        except (BadVersionError, NodeExistsError):
            continue  # another operator switched meanwhile: merge again
        except (KazooException, KazooTimeoutError) as exc:
            raise CoordinationError(f"cannot write {path}: {exc!r}") from exc
        return record
    raise KmedicError(f"{path} kept changing; try again")
