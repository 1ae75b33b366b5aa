"""One sample of one broker: ask the sources in order, classify what failed, build the record.

Order (cheapest first, and the order of failure precedence): the broker's registration and
listener, its JMX exporter (which also gives each local partition's role, agent.roles), the
Admin API reads, its log directories. While the broker is down only the cheap checks run, so a
dead broker costs no timeouts; the Admin client itself is reconnected with exponential backoff
after the cluster stops answering. The whole cluster's Metadata is read only every
``metadata_check_s``, after a failed sample, or every sample while the exporter lacks the
partition gauges.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from agent import disk, roles
from agent.admin import AdminApiError, AdminSource, tcp_reachable
from agent.config import AgentConfig
from agent.exporter import (
    ExporterParseError,
    ExporterSample,
    ExporterUnreachable,
    PageParser,
    fetch_page,
    interval_mean,
)
from agent.nic import configured_nic, nic_for
from agent.probe import Prober
from agent.process import ProcessGauges, ProcessWatch, read_gauges
from agent.record import Header, failure_record, full_record
from kmedic import __version__
from kmedic import brokerstats as bs
from kmedic.logging import get_logger
from kmedic.metadata import BrokerNode, PartitionInfo, TopicPartition

log = get_logger(__name__)

# Samples in a row whose exporter page lacks the partition gauges before the agent warns: a
# broker that is starting lacks them for a sample or two.
GAUGES_MISSING_WARN_AFTER = 3

T = TypeVar("T")


@dataclass
class Backoff:
    """Exponential backoff: ``ready()`` is False until the current delay has passed."""

    initial_s: float
    max_s: float
    clock: Callable[[], float] = time.monotonic
    delay_s: float = 0.0
    not_before: float = 0.0
    failures: int = field(default=0)

    def ready(self) -> bool:
        return self.clock() >= self.not_before

    def failed(self) -> float:
        self.failures += 1
        self.delay_s = min(self.max_s, self.initial_s * 2 ** (self.failures - 1))
        self.not_before = self.clock() + self.delay_s
        return self.delay_s

    def succeeded(self) -> None:
        self.failures = 0
        self.delay_s = 0.0
        self.not_before = 0.0


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


class Sampler:
    """Keeps the previous scrape (the rate baseline) and the last known broker facts."""

    def __init__(
        self,
        config: AgentConfig,
        admin: AdminSource | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.config = config
        self.admin = admin or AdminSource(
            config.cluster_client, config.broker_id, config.request_timeout_s
        )
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._prev: ExporterSample | None = None
        self._parser = PageParser()
        self._node: BrokerNode | None = None
        self._address: tuple[str, int] | None = (
            _split_address(config.broker_address) if config.broker_address else None
        )
        self._log_dir_paths: list[str] = list(config.log_dirs)
        self._log_dir_share = (
            None if config.log_dir_gb is None else int(config.log_dir_gb * 1_000_000_000)
        )
        self._kafka_version = config.kafka_version
        self.admin_backoff = Backoff(initial_s=config.interval_s, max_s=config.max_backoff_s)
        # This broker's partitions at the last Metadata read, and when (monotonic seconds).
        self._metadata: dict[TopicPartition, PartitionInfo] = {}
        self._metadata_at: float | None = None
        self._samples_without_gauges = 0
        self.prober = Prober(self.admin.probe_ms, timeout_s=min(1.0, config.interval_s / 2))
        # The broker's process, sample after sample (agent.process); what this sample found of
        # it: its listener (None: not tried) and its exporter's process gauges (None: no page).
        self.process = ProcessWatch()
        self._listening: bool | None = None
        self._gauges: ProcessGauges | None = None
        self._looked = False

    def listening_now(self) -> bool | None:
        """Whether the broker's listener accepts a connection now (None: its address is not
        known yet): the heartbeat's look, between samples."""
        if self._address is None:
            return None
        return tcp_reachable(*self._address, min(1.0, self.config.request_timeout_s))

    def probe(self) -> None:
        """Probe the broker between samples (agent.probe), while the Admin client is up."""
        if self.admin.connected and self.admin_backoff.ready():
            self.prober.probe_if_due()

    def _header(self, now_ms: int) -> Header:
        node = self._node
        return Header(
            cluster=self.config.cluster,
            broker_id=self.config.broker_id,
            host=node.host if node else (self.config.host or socket.gethostname()),
            rack=node.rack if node else None,
            timestamp_ms=now_ms,
            interval_s=self.config.interval_s,
            agent_version=__version__,
            kafka_version=self._kafka_version,
        )

    def _fail(self, now_ms: int, reason: bs.FailureReason, message: str) -> bs.BrokerStats:
        self._prev = None  # the next good sample starts a new baseline
        self._metadata_at = None  # and reads the cluster's metadata again
        dirs = disk.log_dirs(None, self._log_dir_paths, self._log_dir_share)
        # What the probes measured before the sample failed is evidence still: a broker whose
        # reads time out behind a failing link is the slowest of all (the manager's score).
        probed = self.prober.take()
        return self._with_nic(
            failure_record(self._header(now_ms), bs.Failure(reason=reason, message=message), dirs),
            probed if probed.probe_count else None,
        )

    def _with_nic(
        self, record: bs.BrokerStats, latency: bs.Latency | None = None
    ) -> bs.BrokerStats:
        """The link speed of the interface the broker is reached on (agent.nic), and how long
        the broker took to answer since the last sample (agent.probe)."""
        host = self._address[0] if self._address is not None else record.host
        mbps = self.config.nic_mbps
        nic = nic_for(host) if mbps is None else configured_nic(host, mbps)
        return record.model_copy(update={"nic": nic, "latency": latency})

    def _admin_call(self, call: Callable[[], T]) -> T:
        if not self.admin_backoff.ready():
            wait = self.admin_backoff.not_before - self.admin_backoff.clock()
            raise AdminApiError(f"Admin API unavailable; next attempt in {wait:.0f}s")
        try:
            result = call()
        except AdminApiError as exc:
            delay = self.admin_backoff.failed()
            log.warning("admin_api_backoff", error=str(exc), retry_in_s=delay)
            raise
        self.admin_backoff.succeeded()
        return result

    def sample(self) -> bs.BrokerStats:
        """One record, with the broker's process as this sample found it."""
        self._listening, self._gauges, self._looked = None, None, False
        record = self._sample()
        if not self._looked:  # it stopped before the listener (unregistered, fenced): look
            self._look()
        process = self.process.observe(record.timestamp_ms, self._gauges, self._listening)
        return record.model_copy(update={"process": process})

    def _look(self) -> None:
        """The listener and the exporter's process gauges, for a record that read neither."""
        timeout = min(self.config.request_timeout_s, self.config.interval_s)
        if self._address is not None:
            self._listening = tcp_reachable(*self._address, timeout)
        try:
            self._gauges = read_gauges(fetch_page(self.config.exporter_url, timeout))
        except ExporterUnreachable as exc:
            self._gauges = _slow_page(exc)

    def _sample(self) -> bs.BrokerStats:
        now_ms = self._clock_ms()
        bid = self.config.broker_id
        admin_error: str | None = None
        try:
            nodes = self._admin_call(self.admin.nodes)
            node = nodes.get(bid)
            if node is None:
                self._node = None
                return self._fail(now_ms, "broker_unreachable", f"broker {bid} is not registered")
            self._node = node
            if self.config.broker_address is None:
                self._address = (node.host, node.port)
            if node.fenced:
                return self._fail(now_ms, "broker_unreachable", f"broker {bid} is fenced")
        except AdminApiError as exc:
            admin_error = str(exc)
        timeout = min(self.config.request_timeout_s, self.config.interval_s)
        self._looked = True
        if self._address is not None:
            self._listening = tcp_reachable(*self._address, timeout)
        try:
            page = fetch_page(self.config.exporter_url, timeout)
        except ExporterUnreachable as exc:
            self._gauges = _slow_page(exc)
            if self._listening is False:
                host, port = self._address or ("?", 0)
                reason = f"broker {bid} listener {host}:{port} unreachable"
                return self._fail(now_ms, "broker_unreachable", reason)
            return self._fail(now_ms, "exporter_unreachable", str(exc))
        self._gauges = read_gauges(page)
        if self._listening is False:
            host, port = self._address or ("?", 0)
            return self._fail(
                now_ms, "broker_unreachable", f"broker {bid} listener {host}:{port} unreachable"
            )
        try:
            scrape = self._parser.parse(page, time.monotonic())
        except ExporterParseError as exc:
            return self._fail(now_ms, "exporter_parse_error", str(exc))
        if admin_error is not None:
            return self._fail(now_ms, "admin_api_error", admin_error)
        read_metadata = self._metadata_due(scrape.gauges is not None)
        try:
            view = self._admin_call(lambda: self.admin.read(self._node, metadata=read_metadata))
        except AdminApiError as exc:
            return self._fail(now_ms, "admin_api_error", str(exc))
        local = self._roles(scrape, view.partitions)
        if view.kafka_version and not self.config.kafka_version:
            self._kafka_version = view.kafka_version
        dirs = disk.log_dirs(view.log_dirs, self._log_dir_paths, self._log_dir_share)
        if view.log_dirs:
            self._log_dir_paths = [d.path for d in view.log_dirs]
        prev, self._prev = self._prev, scrape
        latency = self.prober.take(
            interval_mean(prev.produce_local if prev else None, scrape.produce_local),
            interval_mean(prev.log_flush if prev else None, scrape.log_flush),
        )
        return self._with_nic(
            full_record(
                self._header(now_ms),
                prev,
                scrape,
                local,
                view.reassignments,
                dirs,
                failure=disk.disk_failure(dirs),
            ),
            latency,
        )

    def _metadata_due(self, gauged: bool) -> bool:
        if not gauged or self._metadata_at is None:
            return True
        return time.monotonic() - self._metadata_at >= self.config.metadata_check_s

    def _roles(
        self, scrape: ExporterSample, read: list[PartitionInfo] | None
    ) -> list[roles.LocalPartition]:
        """The local partitions' roles: from the broker's gauges, cross-checked against a
        Metadata read when this sample made one; from the read while the gauges are missing."""
        bid = self.config.broker_id
        if read is not None:
            self._metadata = {(p.topic, p.partition): p for p in read}
            self._metadata_at = time.monotonic()
        if scrape.gauges is None:
            # A starting broker has loaded its logs before it knows their partitions; an
            # exporter configured without the gauges never shows them.
            self._samples_without_gauges += 1
            if self._samples_without_gauges == GAUGES_MISSING_WARN_AFTER:
                log.warning(
                    "exporter_lacks_partition_gauges",
                    url=self.config.exporter_url,
                    samples=self._samples_without_gauges,
                    fix="run the broker's exporter with configs/jmx-exporter.yaml",
                    effect="the whole cluster's metadata is read every sample",
                )
            return roles.from_metadata(self._metadata.values(), bid)
        self._samples_without_gauges = 0
        gauged = roles.from_gauges(scrape.gauges, bid, self._metadata)
        if read is not None:
            check = roles.cross_check(gauged, roles.from_metadata(read, bid))
            if check.agrees:
                log.debug("roles_cross_checked", partitions=check.checked)
            else:
                log.warning(
                    "roles_differ_from_metadata",
                    partitions=check.checked,
                    differ=len(check.differ),
                    first=[f"{t}-{p}" for t, p in check.differ[:5]],
                )
        return gauged

    def close(self) -> None:
        self.admin.close()


def _slow_page(exc: ExporterUnreachable) -> ProcessGauges | None:
    """What a page that did not come says of the process: refused, nothing (None: with the
    listener closed too, it is gone); timed out or an HTTP error, that the JVM is there - an
    empty page, so that a start held or starved on a loaded host is never taken for gone and
    back (a false comeback, and three of them a crash loop that heals early)."""
    return ProcessGauges() if exc.there else None
