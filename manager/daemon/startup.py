"""Waiting for ZooKeeper at start: a daemon started during an outage (or before its
ZooKeeper) must be there when it returns, not exit and be given up on by its supervisor.

Each attempt is one line; between attempts the wait doubles from ``FIRST_S`` up to ``MAX_S``.
Meanwhile the manager is unhealthy (``/healthz``, ``kmedic_zookeeper_connected``), and Kafka
needs no such wait: every Kafka client of the manager connects on first use and a cycle that
cannot read the cluster is audited as blind.
"""

from __future__ import annotations

import threading

from kmedic.logging import get_logger
from manager.coordination.znodes import CoordinationError
from manager.daemon.ports import Coordinator

log = get_logger(__name__)

FIRST_S = 2.0
MAX_S = 60.0


def start_coordination(coordinator: Coordinator, stop: threading.Event) -> bool:
    """Start ``coordinator``, as many times as it takes; False when ``stop`` came first."""
    attempt = 0
    while not stop.is_set():
        attempt += 1
        try:
            coordinator.start()
        except CoordinationError as exc:
            retry_s = min(MAX_S, FIRST_S * 2 ** (attempt - 1))
            log.warning(
                "zookeeper_unreachable_at_start",
                attempt=attempt,
                retry_in_s=retry_s,
                error=str(exc),
            )
            stop.wait(retry_s)
            continue
        if attempt > 1:
            log.info("zookeeper_reached", attempts=attempt)
        return True
    return False
