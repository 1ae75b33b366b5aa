"""Keep the job running through failures that are not the data's.

No record can end a query: validation sends bad ones to the DLQ. A query that fails anyway
failed because of its surroundings: a partition whose leader is gone for longer than the Kafka
client waits (``Timeout ... before the position for partition ... could be determined``), a
lost executor, a sink that cannot write. An unattended job must outlive those. So a failed
query is stopped with its sibling, and both start again from their checkpoints after a
backoff that doubles up to a cap. The checkpoint makes that safe: the micro-batch that failed
is replayed and rewrites the same values (streaming.job, "Restart safety").

The backoff arithmetic is pure (:func:`backoff_s`, :func:`gives_up`); :func:`supervise` takes
the start, wait and sleep steps as arguments so the loop is tested without Spark.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from kmedic.errors import KmedicError
from kmedic.logging import get_logger

log = get_logger(__name__)

Q = TypeVar("Q")


class QueryFailed(KmedicError):
    """A streaming query ended with an exception (the message names the query)."""


@dataclass(frozen=True)
class RestartPolicy:
    initial_backoff_s: float
    max_backoff_s: float
    # Failures in a row before the job gives up; None keeps trying for ever.
    max_failures: int | None
    # A run that lasted this long was healthy: the next failure counts as the first again.
    healthy_after_s: float


def backoff_s(policy: RestartPolicy, failures: int) -> float:
    """The wait before restart number ``failures`` (1 for the first): doubling, capped."""
    if failures < 1:
        raise ValueError(f"failures must be at least 1, not {failures}")
    # The exponent is capped so a long outage cannot overflow the float.
    return min(policy.max_backoff_s, policy.initial_backoff_s * 2.0 ** min(failures - 1, 60))


def gives_up(policy: RestartPolicy, failures: int) -> bool:
    return policy.max_failures is not None and failures >= policy.max_failures


def supervise(
    start: Callable[[], list[Q]],
    wait: Callable[[list[Q]], None],
    policy: RestartPolicy,
    *,
    stop: threading.Event | None = None,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_restart: Callable[[], None] | None = None,
) -> int:
    """Run ``start`` then ``wait`` until ``wait`` returns (an available-now job drained its
    topic, or ``stop`` was set); restart after each :class:`QueryFailed`. Returns the number
    of restarts.

    ``wait`` must stop every query before it raises, and return soon after ``stop`` is set.
    The backoff ends early when ``stop`` is set, and nothing starts again. Errors other than
    QueryFailed (a bad checkpoint, Spark itself failing to start a query) are not retried:
    they need a person.
    """
    pause: Callable[[float], object] = sleep or (time.sleep if stop is None else stop.wait)
    failures = 0
    restarts = 0
    while True:
        if stop is not None and stop.is_set():
            return restarts
        began = clock()
        try:
            wait(start())
            return restarts
        except QueryFailed as exc:
            if clock() - began >= policy.healthy_after_s:
                failures = 0
            failures += 1
            if gives_up(policy, failures):
                raise KmedicError(
                    f"{exc}; giving up after {failures} failures in a row "
                    f"(restart.max_failures={policy.max_failures})"
                ) from exc
            delay = backoff_s(policy, failures)
            log.warning(
                "stream_restarting",
                reason=str(exc),
                failures_in_a_row=failures,
                backoff_s=round(delay, 3),
            )
            pause(delay)
            if stop is not None and stop.is_set():
                return restarts
            restarts += 1
            if on_restart is not None:
                on_restart()
