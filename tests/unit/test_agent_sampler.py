"""Failure classification and baselines of one sample.

The exporter is a real HTTP server on loopback serving recorded pages; the listener check is a
real TCP connect. The Admin API is an in-memory stand-in returning fixed views: the real Admin
path runs in tests/integration/test_agent_cluster.py.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agent.admin import AdminApiError, AdminView
from agent.config import AgentConfig
from agent.sampler import GAUGES_MISSING_WARN_AFTER, Backoff, Sampler
from kmedic.metadata import BrokerNode, PartitionInfo

DATA = Path(__file__).parent / "data"


class PageServer:
    def __init__(self) -> None:
        self.page = (DATA / "exporter_broker1_t0.prom").read_bytes()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.end_headers()
                self.wfile.write(server.page)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/metrics"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class StaticAdmin:
    """Answers with fixed nodes and metadata, or fails like an unreachable cluster."""

    def __init__(self, port: int) -> None:
        self.nodes_answer: dict[int, BrokerNode] = {
            1: BrokerNode("127.0.0.1", port, "/r1", fenced=False)
        }
        self.fail = False
        self.probe_answer_ms = 2.0
        self.calls = 0
        self.metadata_reads = 0
        self.partitions = [PartitionInfo("orders", 1, 1, (1, 2), (1, 2))]

    def nodes(self) -> dict[int, BrokerNode]:
        self.calls += 1
        if self.fail:
            raise AdminApiError("cannot reach the cluster")
        return self.nodes_answer

    def read(self, node: BrokerNode | None, *, metadata: bool) -> AdminView:
        self.metadata_reads += metadata
        return AdminView(node, self.partitions if metadata else None, {}, None, "4.1")

    def close(self) -> None:
        pass

    @property
    def connected(self) -> bool:
        return True

    def probe_ms(self, timeout_s: float) -> float:
        return self.probe_answer_ms


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def server() -> Iterator[PageServer]:
    s = PageServer()
    yield s
    s.stop()


def _sampler(
    server: PageServer, tmp_path: Path, **overrides: object
) -> tuple[Sampler, StaticAdmin]:
    settings: dict[str, object] = {
        "broker_id": 1,
        "bootstrap": "127.0.0.1:1",
        "exporter_url": server.url,
        "interval_s": 1.0,
        "request_timeout_s": 2.0,
        "log_dirs": [str(tmp_path)],
        **overrides,
    }
    config = AgentConfig.model_validate(settings)
    admin = StaticAdmin(server.port)
    return Sampler(config, admin=admin), admin  # type: ignore[arg-type]


def test_healthy_then_baseline(server: PageServer, tmp_path: Path) -> None:
    sampler, _ = _sampler(server, tmp_path)
    first = sampler.sample()
    assert first.failure is None and first.rate_window_s is None
    assert first.rack == "/r1" and first.kafka_version == "4.1"
    assert first.log_dirs[0].path == str(tmp_path) and first.log_dirs[0].total_bytes
    server.page = (DATA / "exporter_broker1_t1.prom").read_bytes()
    second = sampler.sample()
    assert second.failure is None and second.rate_window_s is not None
    assert second.leaders[0].estimate == "size_delta"
    assert second.leaders[0].bytes_in_per_s > 0


def test_the_configured_link_speed_is_the_records_nic_and_a_failed_sample_keeps_it(
    server: PageServer, tmp_path: Path
) -> None:
    sampler, _ = _sampler(server, tmp_path, nic_mbps=40)
    nic = sampler.sample().nic
    assert nic is not None and nic.speed_bytes_per_s == 5_000_000, nic
    server.page = b"garbage"
    failed = sampler.sample()
    assert failed.failure is not None
    assert failed.nic is not None and failed.nic.speed_bytes_per_s == 5_000_000
    plain, _ = _sampler(server, tmp_path)
    assert plain.sample().nic.speed_bytes_per_s is None  # type: ignore[union-attr]  # loopback


def test_unregistered_and_fenced_broker(server: PageServer, tmp_path: Path) -> None:
    sampler, admin = _sampler(server, tmp_path)
    admin.nodes_answer = {}
    rec = sampler.sample()
    assert rec.failure is not None and rec.failure.reason == "broker_unreachable"
    assert "not registered" in rec.failure.message
    assert rec.log_dirs[0].path == str(tmp_path)  # disk is still reported
    admin.nodes_answer = {1: BrokerNode("127.0.0.1", server.port, "/r1", fenced=True)}
    rec = sampler.sample()
    assert rec.failure is not None and "fenced" in rec.failure.message


def test_closed_listener_is_broker_unreachable(server: PageServer, tmp_path: Path) -> None:
    sampler, admin = _sampler(server, tmp_path)
    admin.nodes_answer = {1: BrokerNode("127.0.0.1", _free_port(), "/r1", fenced=False)}
    rec = sampler.sample()
    assert rec.failure is not None and rec.failure.reason == "broker_unreachable"
    assert rec.rack == "/r1"  # the last known metadata still names the broker


def test_exporter_down_or_garbage(server: PageServer, tmp_path: Path) -> None:
    sampler, _ = _sampler(server, tmp_path, exporter_url=f"http://127.0.0.1:{_free_port()}/m")
    rec = sampler.sample()
    assert rec.failure is not None and rec.failure.reason == "exporter_unreachable"
    sampler, _ = _sampler(server, tmp_path)
    server.page = b"<html>not metrics</html>"
    rec = sampler.sample()
    assert rec.failure is not None and rec.failure.reason == "exporter_parse_error"


def test_admin_failure_backs_off_then_recovers(server: PageServer, tmp_path: Path) -> None:
    sampler, admin = _sampler(server, tmp_path, interval_s=30.0)
    now = [0.0]
    sampler.admin_backoff.clock = lambda: now[0]
    admin.fail = True
    rec = sampler.sample()
    assert rec.failure is not None and rec.failure.reason == "admin_api_error"
    assert admin.calls == 1
    now[0] = 10.0  # within the 30 s backoff: the cluster is not asked again
    rec = sampler.sample()
    assert rec.failure is not None and "next attempt" in rec.failure.message
    assert admin.calls == 1
    admin.fail = False
    now[0] = 31.0
    rec = sampler.sample()
    assert rec.failure is None and admin.calls == 2
    assert rec.rate_window_s is None  # a failure resets the baseline


def test_a_failed_sample_keeps_what_its_probes_measured(server: PageServer, tmp_path: Path) -> None:
    """A broker whose reads fail behind a failing link answered its probes slowly first: that
    evidence goes out on the failure record (it was thrown away, and a slow broker whose
    every sample failed was never scored slow). A failure with no probe since says nothing."""
    sampler, admin = _sampler(server, tmp_path, interval_s=30.0)
    admin.probe_answer_ms = 900.0
    sampler.probe()
    admin.fail = True
    rec = sampler.sample()
    assert rec.failure is not None and rec.failure.reason == "admin_api_error"
    assert rec.latency is not None and rec.latency.probe_count == 1, rec.latency
    assert rec.latency.probe_p90_ms == 900.0
    rec = sampler.sample()  # backing off: nothing was probed since
    assert rec.failure is not None and rec.latency is None


def test_backoff_doubles_up_to_the_cap() -> None:
    now = [0.0]
    b = Backoff(initial_s=2.0, max_s=10.0, clock=lambda: now[0])
    assert b.ready()
    assert [b.failed() for _ in range(5)] == [2.0, 4.0, 8.0, 10.0, 10.0]
    assert not b.ready()
    now[0] = 10.0
    assert b.ready()
    b.succeeded()
    assert b.failed() == 2.0


def test_roles_come_from_the_gauges_and_metadata_only_every_check(
    server: PageServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole cluster's metadata is read at the first sample, then only once
    metadata_check_s has passed, or after a failed sample; the roles between come from the
    broker's gauges (a page recorded from Kafka 4.1: broker 1 leads roles-1, follows 0, 2, 3
    from broker 2)."""
    now = [1000.0]
    monkeypatch.setattr("agent.sampler.time.monotonic", lambda: now[0])
    server.page = (DATA / "exporter_roles_broker1.prom").read_bytes()
    sampler, admin = _sampler(server, tmp_path, metadata_check_s=300.0)
    admin.partitions = [
        PartitionInfo("roles", 0, 2, (2, 3, 1), (2, 3)),  # broker 1 out of the ISR
        PartitionInfo("roles", 1, 1, (1, 2, 3), (1, 2, 3)),
        PartitionInfo("roles", 2, 2, (2, 3, 1), (2, 3, 1)),
        PartitionInfo("roles", 3, 2, (2, 1, 3), (2, 1, 3)),
    ]
    first = sampler.sample()
    assert first.failure is None and admin.metadata_reads == 1
    assert [(r.topic, r.partition) for r in first.leaders] == [("roles", 1)]
    assert [(r.partition, r.leader_id, r.in_isr) for r in first.followers] == [
        (0, 2, False),
        (2, 2, True),
        (3, 2, True),
    ]
    now[0] += 299.0
    server.page = (DATA / "exporter_roles_broker1_urp.prom").read_bytes()
    second = sampler.sample()
    assert admin.metadata_reads == 1  # the gauges alone
    assert second.totals.under_replicated_count == 1  # roles-1: 2 in sync of 3, by the gauge
    assert [(r.partition, r.in_isr) for r in second.followers] == [
        (0, False),
        (2, True),
        (3, True),
    ]
    now[0] += 1.0
    sampler.sample()
    assert admin.metadata_reads == 2  # metadata_check_s passed
    sampler.sample()
    assert admin.metadata_reads == 2
    server.page = b"<html>not metrics</html>"
    assert sampler.sample().failure is not None
    server.page = (DATA / "exporter_roles_broker1.prom").read_bytes()
    assert sampler.sample().failure is None
    assert admin.metadata_reads == 3  # a failed sample: read again


def test_an_exporter_without_partition_gauges_falls_back_to_metadata_every_sample(
    server: PageServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sampler, admin = _sampler(server, tmp_path, metadata_check_s=300.0)
    for _ in range(GAUGES_MISSING_WARN_AFTER - 1):  # a broker starting: no warning yet
        assert sampler.sample().failure is None
    assert "exporter_lacks_partition_gauges" not in capsys.readouterr().err
    for _ in range(3):
        rec = sampler.sample()
        assert rec.failure is None
        assert [(r.topic, r.partition) for r in rec.leaders] == [("orders", 1)]
    assert admin.metadata_reads == GAUGES_MISSING_WARN_AFTER + 2
    assert capsys.readouterr().err.count("exporter_lacks_partition_gauges") == 1


def test_each_record_says_what_the_agent_sees_of_the_brokers_process(
    server: PageServer, tmp_path: Path
) -> None:
    """Running; then its listener closed while its JVM recovers its logs (the exporter's
    page has only the process gauges yet); then gone (neither answers); then back."""
    sampler, admin = _sampler(server, tmp_path)
    running = sampler.sample().process
    assert running is not None and (running.state, running.listening) == ("running", True)
    assert running.broker_state == 3 and running.restarts == 0
    listener = BrokerNode("127.0.0.1", _free_port(), "/r1", fenced=False)
    admin.nodes_answer = {1: listener}
    server.page = (
        b"kafka_server_kafkaserver_brokerstate 2.0\n"
        b'kafka_log_logmanager_remaininglogstorecover{dir="/d",thread="",} 7.0\n'
    )
    recovering = sampler.sample()
    assert recovering.failure is not None and recovering.failure.reason == "broker_unreachable"
    assert recovering.process is not None
    assert (recovering.process.state, recovering.process.logs_to_recover) == ("recovering", 7)
    assert recovering.process.listening is False
    gone_at = _sampler(server, tmp_path, exporter_url=f"http://127.0.0.1:{_free_port()}/m")
    sampler.config = gone_at[0].config  # the exporter gone too: the process is
    gone = sampler.sample().process
    assert gone is not None and gone.state == "not_running" and gone.down_since_ms is not None
    # Fenced by the controller, the agent still looks at the process itself.
    admin.nodes_answer = {1: BrokerNode("127.0.0.1", listener.port, "/r1", fenced=True)}
    fenced = sampler.sample()
    assert fenced.failure is not None and "fenced" in fenced.failure.message
    assert fenced.process is not None and fenced.process.state == "not_running"
    assert fenced.process.down_since_ms == gone.down_since_ms
    sampler.config = _sampler(server, tmp_path)[0].config
    admin.nodes_answer = {1: BrokerNode("127.0.0.1", server.port, "/r1", fenced=False)}
    server.page = (DATA / "exporter_broker1_t0.prom").read_bytes()
    back = sampler.sample().process
    assert back is not None and (back.state, back.restarts) == ("running", 1)


def test_an_exporter_that_takes_the_connection_and_does_not_answer_is_no_process_gone(
    server: PageServer, tmp_path: Path
) -> None:
    """A JVM alive but slow (a long pause, a start starved on a loaded host): its exporter
    takes the connection and answers nothing in time. With its listener still closed, that is
    "unknown", never "not_running" - a gone-and-back the agent would count as a comeback
    (bench_oracle's smoke: a held start's page timing out told crash_looping). Refused is
    gone."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(8)  # the kernel takes connections; nobody answers them
        url = f"http://127.0.0.1:{hung.getsockname()[1]}/metrics"
        sampler, admin = _sampler(server, tmp_path, exporter_url=url, request_timeout_s=0.3)
        admin.nodes_answer = {1: BrokerNode("127.0.0.1", _free_port(), "/r1", fenced=True)}
        slow = sampler.sample()
        assert slow.process is not None, slow
        assert (slow.process.state, slow.process.down_since_ms) == ("unknown", None)
        admin.nodes_answer = {1: BrokerNode("127.0.0.1", _free_port(), "/r1", fenced=False)}
        unfenced = sampler.sample()
        assert unfenced.failure is not None and unfenced.process is not None
        assert unfenced.process.state == "unknown"
    refused = _sampler(server, tmp_path, exporter_url=f"http://127.0.0.1:{_free_port()}/m")[0]
    refused.admin.nodes_answer = {1: BrokerNode("127.0.0.1", _free_port(), "/r1", fenced=True)}  # type: ignore[attr-defined]
    gone = refused.sample().process
    assert gone is not None and gone.state == "not_running"
