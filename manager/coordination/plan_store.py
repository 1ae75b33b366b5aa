"""The in-flight plan, kept in ZooKeeper at ``<root>/<cluster>/manager/plan``.

A leader writes the plan before it starts the moves and empties it when they are done (the
move history it carries outlives them), so a successor (or the same instance after a restart)
adopts the moves in flight and the hourly move budget instead of starting over. Every write
goes through the coordinator's fenced transaction: a stale leader cannot overwrite what the
current one stored. The version of the znode guards against two writers of the same epoch
(compare-and-set).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from kmedic.errors import KmedicError
from kmedic.logging import get_logger
from manager.coordination.fenced import FencedSession
from manager.coordination.plan_document import PlanDocument
from manager.coordination.znodes import CoordinationError, field_problems

log = get_logger(__name__)


class PlanConflictError(KmedicError):
    """The in-flight plan changed since it was read (compare-and-set on its version failed)."""


@dataclass(frozen=True)
class StoredPlan:
    """The in-flight plan as stored, with the znode version to use for the next write."""

    plan: PlanDocument
    version: int
    epoch: int
    instance: str
    written_at: float


def parse_stored_plan(
    doc: Mapping[str, Any], stat: Any, path: str = "the plan znode"
) -> StoredPlan:
    """The plan znode's JSON document and its stat, as a StoredPlan; a document that does not
    hold a plan is a CoordinationError naming the znode and the field."""
    try:
        plan = PlanDocument.model_validate(doc.get("plan") or {})
        epoch, instance = int(doc.get("epoch", 0)), str(doc.get("instance", ""))
        written_at = float(doc.get("written_at", 0.0))
    except ValidationError as exc:
        problems = field_problems(exc, "plan.")
        raise CoordinationError(f"{path} holds no valid plan: {problems}") from exc
    except (TypeError, ValueError) as exc:
        raise CoordinationError(f"{path} holds no valid plan: {exc}") from exc
    return StoredPlan(plan, int(stat.version), epoch, instance, written_at)


class PlanStore:
    """Read, write and clear the in-flight plan of one cluster, fenced by the epoch."""

    def __init__(self, coordinator: FencedSession, path: str) -> None:
        self._coordinator = coordinator
        self.path = path

    def read(self) -> StoredPlan | None:
        found = self._coordinator.get_json(self.path)
        return None if found is None else parse_stored_plan(*found, self.path)

    def write(self, plan: PlanDocument, expected_version: int | None) -> StoredPlan:
        """Store the plan: create it (``expected_version=None``) or compare-and-set.

        A stale leader's write fails with FencedError; a write over a version that moved
        fails with PlanConflictError.
        """
        coord = self._coordinator
        epoch, instance = coord.epoch, coord.instance_id
        written_at = time.time()
        payload = json.dumps(
            {
                "epoch": epoch,
                "instance": instance,
                "written_at": written_at,
                "plan": plan.to_json(),
            },
            sort_keys=True,
        ).encode()
        results = self._commit(
            lambda tx: (
                tx.create(self.path, payload)
                if expected_version is None
                else tx.set_data(self.path, payload, version=expected_version)
            ),
            f"write the in-flight plan (expected version {expected_version})",
        )
        version = 0 if expected_version is None else int(results[1].version)
        log.info("plan_written", epoch=epoch, version=version, instance=instance)
        return StoredPlan(plan, version, epoch, instance, written_at)

    def clear(self, expected_version: int) -> None:
        """Delete the plan (all its moves are done), fenced like a write."""
        self._commit(
            lambda tx: tx.delete(self.path, version=expected_version),
            f"clear the in-flight plan (expected version {expected_version})",
        )
        coord = self._coordinator
        log.info("plan_cleared", epoch=coord.epoch, instance=coord.instance_id)

    def _commit(self, add_op: Any, what: str) -> list[Any]:
        results = self._coordinator.fenced_commit(add_op, what)
        if isinstance(results[1], Exception):
            raise PlanConflictError(
                f"the in-flight plan changed underneath: cannot {what}: {type(results[1]).__name__}"
            )
        return results
