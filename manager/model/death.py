"""A dead broker's class: what its agent's evidence says about whether it comes back soon.

A broker is dead once the controller has fenced or unregistered it (``manager.monitor.observe``
decides that). Whether to wait out the grace for it is a guess about one question - *will it
come back soon?* - and the agent beside the broker can often answer it: the process is starting
and its log recovery moves forward (wait, however long the timer says), it dies again each time
it starts (heal now), or the agent itself has gone silent with it (the host is lost: heal now).
``manager.monitor.dead_class`` judges it once per cycle; the snapshot's dead ``Broker`` carries
the verdict, and the grace rule (``Broker.in_grace``) reads it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from manager.model.frozen import Frozen

DeathClass = Literal["restarting", "crash_looping", "host_lost", "unknown"]


class Death(Frozen):
    """The class of a dead broker's death and the evidence it rests on, in the audit's words."""

    kind: DeathClass = Field(
        description="restarting: its agent sees it start and recover, moving forward; "
        "crash_looping: it came back and died again too often lately; host_lost: fenced, and "
        "its agent silent past the record it promised; unknown: no evidence either way (the timer)"
    )
    evidence: str = Field(description="the evidence and what it decides, in one sentence")
    heal_now: bool = Field(
        default=False,
        description="two witnesses agree the broker is not coming back soon (the controller's "
        "fencing and its agent's silence or report): no grace is waited out",
    )
    recheck_at_ms: int | None = Field(
        default=None,
        ge=0,
        description="when its class may change with no new word from its agent (its silence "
        "passing the confirmation): the daemon holds a cycle then; None: no such moment",
    )
    wait_until_ms: int | None = Field(
        default=None,
        ge=0,
        description="while it restarts and moves forward, no replica of it is healed before "
        "then (its grace and the write-unavailable grace alike), up to the policy's cap",
    )
