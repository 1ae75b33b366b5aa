"""What one cycle came to, in one word and one sentence (pure).

``Manager.cycle()`` always returns one; the loop logs it once. The kinds:

- ``act``: moves were started (or a leadership-only plan issued);
- ``noop``: the leader looked and had nothing to start (all well, or its own plan still running);
- ``wait``: a dead broker is still inside its grace period (audited and counted, never paged),
  or a fresh instance is still reading its topics to their ends (nothing decided yet);
- ``refuse``: the leader would not act; the reasons are audited and alerted;
- ``standby``: another instance leads (or this one could not prove it still does);
- ``blind``: this instance could not see the cluster or ZooKeeper; nothing was decided.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from manager.model.decision import Decision

CycleKind = Literal["act", "noop", "wait", "refuse", "standby", "blind"]


@dataclass(frozen=True)
class CycleOutcome:
    kind: CycleKind
    sentence: str
    decision: Decision | None = None
    reasons: tuple[str, ...] = ()  # reason codes, for the log line

    @classmethod
    def of(cls, decision: Decision) -> CycleOutcome:
        """The outcome of a decision carried out as decided."""
        codes = tuple(r.code for r in decision.reasons)
        kind = f" ({decision.kind})" if decision.kind else ""
        sentence = f"{decision.outcome}{kind}: {decision.summary}"
        return cls(decision.outcome, sentence, decision, codes)

    @classmethod
    def not_started(cls, kind: CycleKind, decision: Decision, why: str) -> CycleOutcome:
        """A decision to act whose moves this instance did not start, and why."""
        return cls(
            kind,
            f"{kind}: {decision.summary}, but nothing started: {why}",
            decision,
            tuple(r.code for r in decision.reasons),
        )
