"""The KRaft controller quorum's health (pure), from the snapshot's reading of it.

- *No leader*: nothing can be committed to the metadata log: no reassignment, no election, no
  fencing. The gate ``gate_quorum`` (manager.analyzer.gates) holds every plan back.
- *A voter down*: it has not fetched from the leader for ``VOTER_DOWN_MS``, or the leader knows
  no fetch of it at all (a voter dead since before this leader was elected). With three voters,
  one more loss leaves no majority.
- *A voter lagging*: it fetches, but is more than ``VOTER_LAG_RECORDS`` records behind the
  leader's high watermark; it would be a slow leader.
"""

from __future__ import annotations

from manager.model.snapshot import Quorum, QuorumVoter

VOTER_DOWN_MS = 10_000  # a live voter fetches several times a second
VOTER_LAG_RECORDS = 1_000


def down(quorum: Quorum) -> list[QuorumVoter]:
    return [
        v
        for v in quorum.voters
        if v.id != quorum.leader
        and (v.last_fetch_age_ms is None or v.last_fetch_age_ms > VOTER_DOWN_MS)
    ]


def lagging(quorum: Quorum) -> list[QuorumVoter]:
    out = set(v.id for v in down(quorum))
    return [
        v
        for v in quorum.voters
        if v.id not in out and v.lag is not None and v.lag > VOTER_LAG_RECORDS
    ]


def sentence(quorum: Quorum) -> str:
    """'quorum led by 101; voters 100 (down), 101, 102 (3 records behind)'."""
    if quorum.state != "led":
        return f"quorum {quorum.state}: {quorum.error}"
    gone = {v.id for v in down(quorum)}
    behind = {v.id: v.lag for v in lagging(quorum)}

    def one(v: QuorumVoter) -> str:
        if v.id in gone:
            return f"{v.id} (down)"
        if v.id in behind:
            return f"{v.id} ({behind[v.id]} records behind)"
        return str(v.id)

    return f"quorum led by {quorum.leader}; voters " + ", ".join(one(v) for v in quorum.voters)
