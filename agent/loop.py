"""The agent's run loop: sample every interval, publish, serve /metrics, stop cleanly.

The loop keeps its interval grid whatever happens to the broker: a record (possibly a failure
record) per interval. While its broker takes part in a reassignment (the last sample listed
one), the interval is ``busy_interval_s``: kmedic's adaptive throttle reacts to the traffic of
the brokers it copies through, and a minute-old figure is no figure to react to. Records keep
the configured ``interval_s`` (the longest gap to expect: what staleness is judged by). Between
whole records, at most ``interval_s`` apart, a busy sample is published with only the moving
partitions' entries (scope "moving", kmedic.brokerstats.moving_only): at a fleet's size every
replica's entry at the busy rate was 40 MB/s of JSON for the manager to read during a heal
(bench/bench_fleet_manager.py), for figures nothing reads faster than the stream's minute. SIGTERM
or SIGINT ends the current wait, then the producer is flushed (bounded by ``FLUSH_TIMEOUT_S``)
before the process exits.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

from agent.config import AgentConfig
from agent.metrics import AgentMetrics
from agent.publisher import Publisher, ensure_topic
from agent.record import split_record
from agent.sampler import Backoff, Sampler
from kmedic import brokerstats as bs
from kmedic.gc_pause import collector_paused
from kmedic.kafka_preflight import check_credentials
from kmedic.logging import get_logger
from kmedic.web_config import load_web_config

log = get_logger(__name__)

FLUSH_TIMEOUT_S = 10.0


class Agent:
    def __init__(
        self,
        config: AgentConfig,
        *,
        sampler: Sampler | None = None,
        metrics: AgentMetrics | None = None,
        publisher: Publisher | None = None,
        on_record: Callable[[bs.BrokerStats], None] | None = None,
    ) -> None:
        self.config = config
        self.metrics = metrics or AgentMetrics(config.broker_id)
        self.sampler = sampler or Sampler(config)
        self.publisher = publisher or Publisher(
            config, lambda lat, err: self.metrics.delivered(lat, err, time.time())
        )
        self.on_record = on_record
        self._topic_ready = not config.create_topic
        self._topic_backoff = Backoff(initial_s=config.interval_s, max_s=config.max_backoff_s)
        self._busy = False  # the last sample listed a reassignment, or its broker not running
        self._whole_at: float | None = None  # when the last whole record was published
        # When the last record (sample or heartbeat) was taken, and the broker's state then.
        self._spoke_at: float | None = None
        self._state: bs.ProcessState | None = None
        self._known: bs.ProcessState | None = None  # the last state other than "unknown"

    @property
    def interval_s(self) -> float:
        """The wait until the next sample: shorter while the broker takes part in a move, or
        is not running (starting, recovering, shutting down, gone)."""
        if self._busy:
            return min(self.config.interval_s, self.config.busy_interval_s)
        return self.config.interval_s

    def _ensure_topic(self) -> None:
        if self._topic_ready or not self._topic_backoff.ready():
            return
        if ensure_topic(self.config, timeout_s=min(self.config.request_timeout_s, 15.0)):
            self._topic_ready = True
        else:
            self._topic_backoff.failed()

    def run_once(self) -> list[bs.BrokerStats]:
        """Take one sample and queue it (in chunks if large); returns what was queued."""
        self._ensure_topic()
        started = time.monotonic()
        self._spoke_at = started
        # A broker's page and record are tens of thousands of small objects, freed by
        # reference counting: the collector's passes over them found nothing and cost a
        # quarter of a sample (kmedic.gc_pause).
        with collector_paused():
            stats = self.sampler.sample()
            if self._moving_only(stats, started):
                stats = bs.moving_only(stats)
            else:
                self._whole_at = started
            chunks = split_record(stats, self.config.max_record_bytes)
            size = 0
            for chunk in chunks:
                value = bs.to_json(chunk)
                size += len(value)
                self.publisher.publish(chunk, value)
        self.metrics.record_sample(stats, time.monotonic() - started, size)
        # Busy while its broker moves data, and while it is not running: a start, a log
        # recovery and an exit are seen at the busy rate (the manager's wait-or-heal evidence).
        state = stats.process.state if stats.process is not None else None
        self._busy = bool(stats.reassigning) or self._not_running(state)
        self._state = state
        if state not in (None, "unknown"):
            self._known = state
        if stats.failure is None:
            log.info(
                "sample_published",
                broker=stats.broker_id,
                leaders=stats.totals.leader_count,
                followers=stats.totals.follower_count,
                chunks=len(chunks),
                bytes=size,
            )
        else:
            log.warning(
                "broker_sample_failed",
                broker=stats.broker_id,
                reason=stats.failure.reason,
                message=stats.failure.message,
            )
        if self.on_record is not None:
            self.on_record(stats)
        return chunks

    def heartbeat_if_due(self) -> bool:
        """Between samples: when a heartbeat is due, look at the broker's listener and publish
        one. False when the look found a running broker's listener closed: the caller samples
        at once, so that the exit is in a record within seconds."""
        every = self.config.heartbeat_interval_s
        now = time.monotonic()
        if every is None or (self._spoke_at is not None and now - self._spoke_at < every):
            return True
        listening = self.sampler.listening_now()
        if listening is False and self._state == "running":
            return False
        self._spoke_at = now
        beat = bs.Heartbeat(
            heartbeat=1,
            cluster=self.config.cluster,
            broker_id=self.config.broker_id,
            timestamp_ms=int(time.time() * 1000),
            next_within_s=min(every, self.interval_s),
            listening=listening,
        )
        self.publisher.publish(beat)
        return True

    def _heartbeat(self) -> bool:
        try:
            return self.heartbeat_if_due()
        except Exception:
            # As a crashed sample: the agent goes on; its next sample speaks for it.
            log.exception("heartbeat_crashed", broker=self.config.broker_id)
            return True

    def _not_running(self, state: bs.ProcessState | None) -> bool:
        """Its broker not running, or not known to be: a state not yet on the exporter's page
        after one that was not running (a JVM seconds old: its start is watched at the busy
        rate too, or a crash loop's short lives go unseen between two samples a minute apart).
        An agent that never saw the state (another host, a container) samples as usual."""
        if state == "unknown":
            return self._known not in (None, "running")
        return state is not None and state != "running"

    def _moving_only(self, stats: bs.BrokerStats, now: float) -> bool:
        """A busy sample between whole records: a whole one at least every interval_s, and
        always when the move is over (the record then says where every replica is)."""
        if not (self._busy and stats.reassigning) or stats.failure is not None:
            return False
        if self._whole_at is None:
            return False
        # Half a sample's slack: a whole record is due at the sample nearest interval_s, not
        # one sample later for a millisecond's drift (and never cut when busy is not faster).
        return now - self._whole_at < self.config.interval_s - self.interval_s / 2

    def run(self, stop: threading.Event) -> None:
        """Sample on the interval grid until ``stop`` is set, then flush."""
        next_at = time.monotonic()
        try:
            while not stop.is_set():
                try:
                    self.run_once()
                except Exception:
                    # A bug or an unforeseen client error must not end the agent: the broker
                    # would look silent. Log it with its traceback and try again next interval.
                    log.exception("sample_crashed", broker=self.config.broker_id)
                next_at += self.interval_s
                now = time.monotonic()
                if next_at < now:  # a sample overran the interval: skip, don't burst
                    next_at = now + self.interval_s
                while not stop.is_set() and (left := next_at - time.monotonic()) > 0:
                    self.publisher.poll(min(left, 0.25))
                    self.sampler.probe()
                    if not self._heartbeat():
                        next_at = time.monotonic()  # its broker just went: sample now
                        break
        finally:
            undelivered = self.publisher.flush(FLUSH_TIMEOUT_S)
            self.sampler.close()
            log.info("agent_stopped", broker=self.config.broker_id, undelivered=undelivered)


def run_agent(config: AgentConfig) -> int:
    """The `kmedic agent` process: signals, /metrics server, loop."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("agent_stopping", signal=signal.Signals(signum).name)
        stop.set()

    check_credentials(config.cluster_client, role="agent")
    if config.publish_client != config.cluster_client:
        check_credentials(config.publish_client, role="agent (publish_kafka)")
    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    agent = Agent(config)
    server = None
    if config.metrics_port is not None:
        web = load_web_config(config.web_config_file) if config.web_config_file else None
        server = agent.metrics.serve(config.metrics_host, config.metrics_port, web)
    log.info(
        "agent_started",
        broker=config.broker_id,
        exporter=config.exporter_url,
        topic=config.topic,
        interval_s=config.interval_s,
        metrics_port=config.metrics_port,
    )
    try:
        agent.run(stop)
    finally:
        if server is not None:
            server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
