"""Audit records in the order of their writers' leadership epochs, where the topic's order
differs.

A leader's record can reach the audit topic after its successor's first ones: a Produce it sent
within its lease to a broker that hung (a long pause, SIGSTOP) sits in that broker's socket and
is appended when the broker resumes, however late - no purge on the client reaches it (the
soak, seed 5150: a record appended 1.9 s after its writer's lease could have ended, 5 s before
its successor's first write). Nothing else follows from such a record: it changes no cluster
state, and it says who wrote it at which epoch and when. A reader puts it back where it
belongs, before the first record of the newer epoch made after it:
``in_epoch_order`` for a listing read to its end, ``Lateness`` for a follower, which can only
say so when it arrives.

Records of epoch 0 (written before any leadership, or by no leader) keep their places.
"""

from __future__ import annotations

from collections.abc import Iterable

from manager.audit.log import AuditRecord


def in_epoch_order(records: Iterable[AuditRecord]) -> list[AuditRecord]:
    """The records in the topic's order, but each late one - of an older epoch than a record
    of its cluster before it, and made before that record - put back before the first such."""
    out: list[AuditRecord] = []
    newest: dict[str, int] = {}
    for record in records:
        if 0 < record.epoch < newest.get(record.cluster, 0):
            spot = next(
                (
                    i
                    for i, earlier in enumerate(out)
                    if earlier.cluster == record.cluster
                    and earlier.epoch > record.epoch
                    and earlier.time_ms >= record.time_ms
                ),
                None,
            )
            if spot is not None:
                out.insert(spot, record)
                continue
        if record.epoch > 0:  # the epoch now (lower than before only where it was counted anew)
            newest[record.cluster] = record.epoch
        out.append(record)
    return out


class Lateness:
    """For a reader that follows: whether a record arrives after a record of a later epoch of
    its cluster that was made after it (that epoch, when it does). An epoch counted anew (the
    coordination state reset) is no lateness: its records are made after the old ones."""

    def __init__(self) -> None:
        self._newest: dict[str, tuple[int, int]] = {}  # cluster -> epoch, its first record's ms

    def after(self, record: AuditRecord) -> int | None:
        if record.epoch <= 0:
            return None
        epoch, began_ms = self._newest.get(record.cluster, (0, 0))
        if record.epoch < epoch and record.time_ms <= began_ms:
            return epoch
        if record.epoch != epoch:  # a newer epoch, or one counted anew
            self._newest[record.cluster] = (record.epoch, record.time_ms)
        return None
