"""The broker's process as the agent beside it sees it (pure: the sampler feeds it what each
sample found): Kafka's own ``BrokerState`` and its log recovery's progress (KIP-831), read off
the exporter's page, and whether the broker's listener accepts connections.

Kafka's exporter runs inside the broker's JVM (``configs/jmx-exporter.yaml``): while the JVM
lives, its page says what the broker is doing - starting, recovering its logs (how many are
left), running, shutting down - even before the broker serves a request, when the rest of the
page is not there yet. When neither the page nor the listener answers, the process is gone
(or its host is cut off): ``not_running``, from the first sample that found it so. A broker
that comes back from that counts as a restart; the manager reads how many in the last
``RESTART_WINDOW_S`` (a crash loop) beside the state (docs/brokerstats.md, "Process").
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from kmedic import brokerstats as bs

RESTART_WINDOW_S = 600.0
# Kafka's BrokerState values (org.apache.kafka.metadata.BrokerState).
STATES: dict[int, bs.ProcessState] = {
    0: "not_running",
    1: "starting",
    2: "recovering",
    3: "running",
    6: "shutting_down",  # pending controlled shutdown
    7: "shutting_down",
}
_GAUGE = re.compile(
    r"^(kafka_server_kafkaserver_brokerstate|kafka_log_logmanager_remaining"
    r"(?:logs|segments)torecover)(?:\{[^}]*\})? (\S+)$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class ProcessGauges:
    """What the exporter's page says of the process (None: not on the page)."""

    broker_state: int | None = None
    logs_to_recover: int | None = None
    segments_to_recover: int | None = None


def read_gauges(page: str) -> ProcessGauges:
    """The process's gauges off an exporter page, complete or not (a starting broker's page
    has them before its traffic counters); the recovery gauges summed over directories."""
    state: int | None = None
    logs: int | None = None
    segments: int | None = None
    for name, raw in _GAUGE.findall(page):
        try:
            value = int(float(raw))
        except ValueError:
            continue
        if name == "kafka_server_kafkaserver_brokerstate":
            state = value
        elif name.endswith("logstorecover"):
            logs = (logs or 0) + max(0, value)
        else:
            segments = (segments or 0) + max(0, value)
    return ProcessGauges(state, logs, segments)


class ProcessWatch:
    """The process's state sample after sample: when it was first seen down, and its
    restarts within ``window_s``."""

    def __init__(self, window_s: float = RESTART_WINDOW_S) -> None:
        self.window_s = window_s
        self._down_since_ms: int | None = None
        self._comebacks: deque[int] = deque()  # Unix ms of each return seen
        self._was: bs.ProcessState | None = None
        # The start's progress: when it last moved forward, and how much was left to recover.
        self._progress_ms: int | None = None
        self._left: tuple[int, int] | None = None

    def observe(
        self, now_ms: int, gauges: ProcessGauges | None, listening: bool | None
    ) -> bs.Process:
        """This sample's view: ``gauges`` None when the exporter did not answer; ``listening``
        None when the broker's address is not known yet."""
        state = _state(gauges, listening)
        if state == "not_running":
            if self._down_since_ms is None:
                self._down_since_ms = now_ms
        elif state in ("starting", "recovering", "running"):
            # Only a state Kafka reports is a return. A start held by its controllers shows
            # its page without its state, and a page that times out then looks gone: taking
            # "unknown" for a return counted every such flap as a comeback (bench_oracle's
            # smoke: a held start told crash_looping, a class that heals early).
            if self._was == "not_running":
                self._comebacks.append(now_ms)
            self._down_since_ms = None
        self._track_progress(now_ms, state, gauges)
        if state != "unknown":
            self._was = state
        while self._comebacks and now_ms - self._comebacks[0] > self.window_s * 1000:
            self._comebacks.popleft()
        return bs.Process(
            state=state,
            broker_state=gauges.broker_state if gauges else None,
            logs_to_recover=gauges.logs_to_recover if gauges else None,
            segments_to_recover=gauges.segments_to_recover if gauges else None,
            listening=listening,
            down_since_ms=self._down_since_ms if state == "not_running" else None,
            restarts=len(self._comebacks),
            restart_window_s=self.window_s,
            progress_ms=self._progress_ms if state in _STARTING else None,
        )

    def _track_progress(
        self, now_ms: int, state: bs.ProcessState, gauges: ProcessGauges | None
    ) -> None:
        """A start moves forward when its state advances (not running, starting, recovering)
        or fewer logs or segments are left to recover; the first sample of a start counts."""
        if state not in _STARTING:
            if state != "unknown":
                self._progress_ms, self._left = None, None
            return
        left = (
            (gauges.logs_to_recover or 0, gauges.segments_to_recover or 0)
            if gauges is not None
            else None
        )
        if (
            self._progress_ms is None
            or self._was != state
            or (left is not None and self._left is not None and left < self._left)
        ):
            self._progress_ms = now_ms
        if left is not None:
            self._left = left


_STARTING = ("starting", "recovering")


def _state(gauges: ProcessGauges | None, listening: bool | None) -> bs.ProcessState:
    if gauges is not None and gauges.broker_state is not None:
        return STATES.get(gauges.broker_state, "unknown")
    if gauges is None and listening is False:
        return "not_running"  # neither its JVM's exporter nor its listener answers
    return "unknown"
