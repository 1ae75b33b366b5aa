"""The configs the pipeline (demo and e2e) writes for each role load through the role's own
model, so a renamed or mistyped key fails here rather than as a role that exits at start."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from agent.config import AgentConfig
from composition.pipeline import Pipeline
from kmedic.kafka_client import KafkaClientSettings
from kmedic.localcluster import LocalCluster
from kmedic.localcluster.security import ClusterSecurity
from manager.config import ManagerConfig
from streaming.config import StreamConfig


class _Broker:
    host = "127.0.0.1"
    port = 19092


class _FakeCluster:
    """The attributes of LocalCluster the pipeline reads to write configs."""

    bootstrap_servers = "127.0.0.1:19092"
    zk_connect = "127.0.0.1:12181"
    broker_ids = (1, 2)
    security: ClusterSecurity | None = None
    nic_mbps: int | None = None

    def kafka_section(self, user: str) -> dict[str, Any]:
        assert self.security is not None
        return self.security.client(self.bootstrap_servers, user).model_dump(
            mode="json", exclude_defaults=True
        )

    def exporter_url(self, broker_id: int) -> str:
        return f"http://127.0.0.1:{17000 + broker_id}/metrics"

    def broker(self, broker_id: int) -> _Broker:
        return _Broker()

    def data_dir(self, broker_id: int) -> Path:
        return Path(f"/tmp/broker-{broker_id}")


def _pipeline(tmp_path: Path) -> Pipeline:
    return Pipeline(cast(LocalCluster, _FakeCluster()), tmp_path)


def test_the_agent_config_loads(tmp_path: Path) -> None:
    cfg = AgentConfig(**_pipeline(tmp_path).agent_config(2, 2.0))
    assert cfg.broker_id == 2 and cfg.interval_s == 2.0
    # Four agents on one machine: a fixed port would collide; the e2e does not scrape them.
    assert cfg.metrics_port is None
    assert cfg.broker_address == "127.0.0.1:19092"
    assert cfg.nic_mbps is None  # the kernel's figure, as on any host
    # The brokers share the host's one disk: each reports a share of it, so a host disk others
    # filled past policy.disk_fraction does not refuse every heal for capacity.
    assert cfg.log_dir_gb is not None and cfg.log_dir_gb > 0


def test_a_shaped_clusters_agents_report_its_link_speed(tmp_path: Path) -> None:
    cluster = _FakeCluster()
    cluster.nic_mbps = 40
    cfg = AgentConfig(**Pipeline(cast(LocalCluster, cluster), tmp_path).agent_config(1, 2.0))
    assert cfg.nic_mbps == 40


def test_the_stream_config_loads_with_demo_scale_restarts(tmp_path: Path) -> None:
    cfg = StreamConfig(**_pipeline(tmp_path).stream_config())
    policy = cfg.restart.policy()
    assert policy.initial_backoff_s == 1 and policy.max_backoff_s == 10
    assert cfg.cluster == "local"
    assert cfg.metrics_port is not None and cfg.metrics_port > 0


def test_the_manager_config_loads_with_overrides_merged(tmp_path: Path) -> None:
    overrides: dict[str, Any] = {"policy": {"max_dead_brokers": 1}}
    doc = _pipeline(tmp_path).manager_config(**overrides)
    cfg = ManagerConfig(**doc)
    assert cfg.policy.max_dead_brokers == 1
    assert cfg.snapshot_path == tmp_path / "snapshot.json"


def test_on_a_secured_cluster_every_role_connects_by_its_kafka_section(tmp_path: Path) -> None:
    fake = _FakeCluster()
    fake.security = ClusterSecurity.create(tmp_path / "security")
    pipeline = Pipeline(cast(LocalCluster, fake), tmp_path / "pipeline")
    clients = {
        "agent": AgentConfig(**pipeline.agent_config(1, 2.0)).cluster_client,
        "stream": StreamConfig(**pipeline.stream_config()).cluster_client,
        "manager": ManagerConfig(**pipeline.manager_config()).cluster_client,
    }
    for role, client in clients.items():
        # Each role connects as its own user: the authorizer grants each only what it needs.
        assert isinstance(client, KafkaClientSettings)
        assert client.security_protocol == "SASL_SSL" and client.username == f"kmedic-{role}"
        assert client.password is None and client.password_file is not None
        assert client.resolved_password() == fake.security.password(f"kmedic-{role}")
        assert client.ssl_ca_file == fake.security.ca_file
