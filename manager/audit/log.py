"""The audit log: every decision, action and alert as one JSON record on ``kmedic.actions``.

Records are written to the primary audit topic (idempotent producer, acks=all). When the
primary cannot take a record within a bound, the record goes to the failover sink instead: the
secondary bootstrap when one is configured, and always the local fsync'd spool. The record says
which sink took it. Spooled records are replayed to the primary, oldest first, before any newer
record is written there, so the topic keeps the order in which things happened. A record may
reach the primary twice (a write that timed out and was delivered anyway, a crash between replay
and cursor update); readers drop repeats by ``id``, so nothing is lost and nothing is doubled.

A leader's records are written ``within_s`` its lease (manager.coordination.lease): the wait for
the primary, the secondary and the spool's replay are bounded by what the lease has left, and
what a sink has not delivered by then is dropped from it, so nothing of an old epoch reaches the
topic after its session could have expired. A record made once the lease has run out goes to the
spool alone: a move started within the lease and told just after it is still told (the soak saw
one withheld once), later, tagged with its epoch - replayed within the lease, or by a connected
standby (manager.daemon.audit_trail.replay_bound), never while the instance cannot tell whether
it leads.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kmedic.logging import get_logger
from manager.audit.spool import Spool
from manager.model.reasons import REASON_CODES

log = get_logger(__name__)

AuditKind = Literal[
    "decision",
    "would_act",  # a decision to act that observe mode kept from the cluster: the full plan
    "action_started",
    "action_progress",
    "action_completed",
    "action_failed",
    "alert_raised",
    "alert_cleared",
    "readiness",  # the failure-readiness sweep's summary, when it changes (docs/readiness.md)
    "slowness",  # a broker (or the cluster) found slow, or no longer (docs/manager.md)
    "catch_up",  # a returning broker's copies throttled, or no longer (docs/planner.md, "Rejoin")
    "operator",  # an operator's write through the HTTP API: who, from where, what (docs/api.md)
]
SinkName = Literal["primary", "secondary", "spool"]


class AuditRecord(BaseModel):
    """One audit event. ``summary`` is the sentence on-call reads; the rest is for machines."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    time_ms: int = Field(default_factory=lambda: int(time.time() * 1000), ge=0)
    cluster: str = Field(min_length=1)
    instance: str = Field(min_length=1)
    epoch: int = Field(ge=0)
    kind: AuditKind
    summary: str = ""
    reasons: tuple[str, ...] = ()
    partitions: tuple[str, ...] = Field(default=(), description="topic:partition")
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    details: dict[str, Any] = {}
    sink: SinkName = "primary"

    def to_json(self) -> bytes:
        return self.model_dump_json().encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> AuditRecord:
        return cls.model_validate_json(data)


class AuditSink(Protocol):
    """Somewhere records can be written with a bound on how long the write may take."""

    name: str

    def send(self, records: list[AuditRecord], timeout_s: float) -> int:
        """Write ``records`` in order; return how many (a prefix) were acknowledged."""
        ...

    def close(self) -> None: ...


class AuditLog:
    """Writes records to the primary sink, failing over to the secondary and the spool."""

    def __init__(
        self,
        primary: AuditSink,
        spool_dir: Path,
        *,
        secondary: AuditSink | None = None,
        write_timeout_s: float = 5.0,
        retry_interval_s: float = 5.0,
        replay_batch: int = 500,
    ) -> None:
        self.primary = primary
        self.secondary = secondary
        self.spool = Spool(spool_dir)
        self.write_timeout_s = write_timeout_s
        self.retry_interval_s = retry_interval_s
        self.replay_batch = replay_batch
        self._next_retry = 0.0
        self.failover_spells = 0  # begun so far (``failover_spell``)
        self.counts: dict[str, int] = {
            "primary": 0,
            "secondary": 0,
            "spool": 0,
            "replayed": 0,
        }
        # The cycle and the HTTP API's writes both write: one at a time, so the order of the
        # topic and of the spool is the order of the writes.
        self._lock = threading.RLock()

    @property
    def on_failover(self) -> bool:
        """True while records wait in the spool for the primary to come back."""
        return self.spool.pending() > 0

    @property
    def failover_spell(self) -> int | None:
        """Which spell of failover the records waiting in the spool belong to (None: none
        waits). A spell begins when a record goes to an empty spool and ends with the replay
        that empties it: a spell replayed and another begun between two looks are two, however
        short the gap (a reader sampling ``on_failover`` once a cycle took them for one)."""
        return self.failover_spells if self.on_failover else None

    def write(self, record: AuditRecord) -> AuditRecord:
        """Write one record; returns it as stored (its ``sink`` says where it went)."""
        return self.write_all([record])[0]

    def write_all(
        self, records: list[AuditRecord], *, within_s: float | None = None, replay: bool = True
    ) -> list[AuditRecord]:
        """Write ``records`` in order, to the primary in one send (one wait for its
        acknowledgement, not one per record); those it did not take within the bound fail
        over, in order. ``within_s``: the writer's lease left (None: not bounded by one); at 0
        the records go to the spool alone. ``replay``: the spool first (False: a standby's
        record waits behind it). Returns them as stored."""
        with self._lock:
            if within_s is not None and within_s <= 0:
                log.warning("audit_spooled_past_lease", records=len(records))
                return [self._fail_over(r, lambda: 0.0) for r in records]
            return self._write(records, self._budget(within_s), replay=replay)

    def _budget(self, within_s: float | None) -> Callable[[], float]:
        """Each send's bound: the write timeout, and what is left of the lease."""
        if within_s is None:
            return lambda: self.write_timeout_s
        end = time.monotonic() + within_s
        return lambda: min(self.write_timeout_s, end - time.monotonic())

    def _write(
        self, records: list[AuditRecord], left: Callable[[], float], *, replay: bool
    ) -> list[AuditRecord]:
        if not records:
            return []
        if self.on_failover and replay:
            self._replay(False, left)
        taken = 0
        if not self.on_failover:
            taken = _send(self.primary, records, left())
            self.counts["primary"] += taken
            if taken < len(records):
                first = records[taken]
                log.warning("audit_primary_unavailable", record=first.id, kind=first.kind)
                self._next_retry = time.monotonic() + self.retry_interval_s
        return records[:taken] + [self._fail_over(r, left) for r in records[taken:]]

    def replay(self, force: bool = False, *, within_s: float | None = None) -> int:
        """Send spooled records to the primary in order; returns how many were replayed.

        Tries at most once per ``retry_interval_s`` unless forced, so that a dead primary does
        not slow every write down by the full timeout. ``within_s``: the lease left (0: not
        now, the spool waits).
        """
        if within_s is not None and within_s <= 0:
            return 0
        with self._lock:
            return self._replay(force, self._budget(within_s))

    def _replay(self, force: bool, left: Callable[[], float]) -> int:
        if not self.on_failover or (not force and time.monotonic() < self._next_retry):
            return 0
        replayed = 0
        while True:
            batch = self.spool.peek(self.replay_batch)
            if not batch:
                break
            valid: list[tuple[int, AuditRecord]] = []
            for offset, raw in batch:
                try:
                    valid.append((offset, AuditRecord.from_json(raw)))
                except ValidationError as exc:
                    self.spool.quarantine(raw, f"not an audit record: {exc.error_count()} errors")
            done = _send(self.primary, [r for _, r in valid], left())
            replayed += done
            if done < len(valid):
                if done:
                    self.spool.commit(valid[done - 1][0])
                self._next_retry = time.monotonic() + self.retry_interval_s
                break
            self.spool.commit(batch[-1][0])
        if replayed:
            self.counts["replayed"] += replayed
            log.info("audit_replayed", records=replayed, pending=self.spool.pending())
        return replayed

    def close(self) -> None:
        self.primary.close()
        if self.secondary is not None:
            self.secondary.close()
        self.spool.close()

    def _fail_over(self, record: AuditRecord, left: Callable[[], float]) -> AuditRecord:
        stored = record.model_copy(update={"sink": "spool"})
        if self.secondary is not None:
            candidate = record.model_copy(update={"sink": "secondary"})
            if _send(self.secondary, [candidate], left()) == 1:
                stored = candidate
                self.counts["secondary"] += 1
        # Always spooled: the spool is what gets replayed to the primary, in order.
        if self.spool.pending() == 0:
            self.failover_spells += 1
        self.spool.append(stored.to_json())
        self.counts["spool"] += 1
        log.warning("audit_failover", record=stored.id, sink=stored.sink)
        return stored


def _send(sink: AuditSink, records: list[AuditRecord], timeout_s: float) -> int:
    """``sink.send`` within ``timeout_s``; none at all once the bound has passed."""
    return sink.send(records, timeout_s) if timeout_s > 0 else 0


def render_line(record: AuditRecord, *, compact: bool = False) -> str:
    """One readable line for on-call: time, kind, who, what, why, where. ``compact``: each
    reason by its code alone where it has one (the summary already says most of what a
    reason's sentence does: lines of 250-600 characters), the full record with --verbose."""
    when = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.time_ms / 1000))
    when += f".{record.time_ms % 1000:03d}Z"
    parts = [when, f"{record.kind:<16}", f"{record.cluster} {record.instance} e{record.epoch}"]
    parts.append(record.summary or "-")
    if record.reasons:
        reasons = _codes(record.reasons) if compact else record.reasons
        parts.append("because " + "; ".join(reasons))
    if record.partitions:
        shown = ", ".join(record.partitions[:5])
        more = len(record.partitions) - 5
        parts.append(f"partitions {shown}" + (f" (+{more} more)" if more > 0 else ""))
    if record.sink != "primary":
        parts.append(f"[via {record.sink}]")
    return "  ".join(parts)


def _codes(reasons: Sequence[str]) -> list[str]:
    """Each reason by its code when it starts with one (``code: sentence``), in order, once."""
    known = set(REASON_CODES)
    out: list[str] = []
    for reason in reasons:
        head = reason.split(": ", 1)[0]
        short = head if head in known else reason
        if short not in out:
            out.append(short)
    return out
