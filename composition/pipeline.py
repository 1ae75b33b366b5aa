"""The whole kmedic pipeline beside a local cluster: one agent per broker, the Spark job, the
manager — each its own `kmedic <role> --config FILE` process, as in production.

Used by the demo and the end-to-end tests. Config files and logs go to the work directory;
every process is tied to this one (it dies with it) and stopped by ``stop``.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kmedic.errors import KmedicError
from kmedic.kafka_acls import Role
from kmedic.localcluster import LocalCluster, class_sharing, process
from kmedic.localcluster.security import role_user
from kmedic.logging import get_logger

log = get_logger(__name__)


@dataclass
class RoleProcess:
    name: str
    config: Path
    log_file: Path
    pid: int | None = None

    @property
    def marker(self) -> str:
        return str(self.config)

    def running(self) -> bool:
        return process.is_running(self.pid, self.marker)


# Each local broker's share of the host's file system, reported by its agent: the brokers' own
# replicas count against it, not whatever else fills the disk. Without it, a host disk over 85 %
# full (policy.disk_fraction) refused every heal for capacity.
LOG_DIR_GB = 20.0


@dataclass
class Pipeline:
    """Starts roles on demand; ``stop`` ends every one of them (SIGTERM, then SIGKILL)."""

    cluster: LocalCluster
    workdir: Path
    cluster_name: str = "local"
    roles: dict[str, RoleProcess] = field(default_factory=dict)
    # Where the Spark job serves its /metrics, and where a manager started with http.port set
    # to ``manager_port`` serves its page (the demo's, told before the manager starts): free
    # ports chosen together when the pipeline is made (two separate choices may be one port).
    stream_metrics_port: int = 0
    manager_port: int = 0

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not (self.stream_metrics_port and self.manager_port):
            self.stream_metrics_port, self.manager_port = process.free_ports(2)

    # ---- roles --------------------------------------------------------------------------

    def start_agents(self, interval_s: float = 2.0, **overrides: Any) -> None:
        for broker_id in self.cluster.broker_ids:
            self.start_agent(broker_id, interval_s=interval_s, **overrides)

    def agent_config(self, broker_id: int, interval_s: float, **overrides: Any) -> dict[str, Any]:
        """A shaped cluster's agent reports the shaped rate as its broker's NIC speed. Every
        broker's log directory is a share of the host's one file system (``LOG_DIR_GB``)."""
        broker = self.cluster.broker(broker_id)
        shaped = {} if self.cluster.nic_mbps is None else {"nic_mbps": self.cluster.nic_mbps}
        return {
            "broker_id": broker_id,
            **self._kafka("agent"),
            "exporter_url": self.cluster.exporter_url(broker_id),
            "broker_address": f"{broker.host}:{broker.port}",
            "log_dirs": [str(self.cluster.data_dir(broker_id))],
            "cluster": self.cluster_name,
            "interval_s": interval_s,
            "request_timeout_s": min(5.0, interval_s),
            "max_backoff_s": max(2.0, interval_s),
            "metrics_port": None,
            "log_dir_gb": LOG_DIR_GB,
            **shaped,
            **overrides,
        }

    def start_agent(
        self,
        broker_id: int,
        interval_s: float = 2.0,
        enter: Callable[[], None] | None = None,
        **overrides: Any,
    ) -> None:
        """``enter``: a ``preexec_fn`` (a client cgroup a cut may find: ``cut_host``)."""
        self.start_role(
            f"agent-{broker_id}",
            "agent",
            self.agent_config(broker_id, interval_s, **overrides),
            enter=enter,
        )

    def stream_config(self, **overrides: Any) -> dict[str, Any]:
        return {
            "cluster": self.cluster_name,
            **self._kafka("stream"),
            "window": "30s",
            "slide": "10s",
            "watermark": "20s",
            "statistic": "max",
            # A micro-batch per slide: each costs the job CPU the brokers and managers
            # beside it on two cores need (at 3 s the job took a whole core).
            "trigger_interval": "10s",
            "checkpoint_location": str(self.workdir / "stream-checkpoint"),
            # Demo scale: back within seconds after the brokers the story kills return.
            "restart": {"initial_backoff": "1s", "max_backoff": "10s"},
            "metrics_port": self.stream_metrics_port,
            "metrics_host": "127.0.0.1",
            "spark": {
                "master": "local[2]",
                "driver_memory": "768m",
                "shuffle_partitions": 2,
                # Inside the run's directory: a job the tests or the soak SIGKILL leaves its
                # scratch there, not in /tmp.
                "local_dir": str(self.workdir / "stream-scratch"),
                # A short-lived job on shared cores: C1 alone and the serial collector halve
                # its start's CPU and cut a third of its steady use (docs/streaming.md); its
                # classes mapped from the bootstrap's archive, a third less again.
                "driver_java_options": [
                    *process.LIGHT_JVM_OPTIONS,
                    *class_sharing.spark_driver_options(),
                ],
            },
            **overrides,
        }

    def start_stream(self, **overrides: Any) -> None:
        self.start_role("stream", "stream", self.stream_config(**overrides))

    def manager_config(self, **overrides: Any) -> dict[str, Any]:
        cfg: dict[str, Any] = {
            "cluster": self.cluster_name,
            **self._kafka("manager"),
            "zookeeper": {"zk_connect": self.cluster.zk_connect, "session_timeout_s": 6},
            "mode": "act",  # the demo and the tests show kmedic acting (an install observes)
            "interval_s": 3,
            "snapshot_path": str(self.workdir / "snapshot.json"),
            "audit": {"spool_dir": str(self.workdir / "audit-spool")},
            "http": {"port": 0},
        }
        for key, value in overrides.items():
            if isinstance(value, dict) and isinstance(cfg.get(key), dict):
                cfg[key] = {**cfg[key], **value}
            else:
                cfg[key] = value
        return cfg

    def start_manager(
        self, name: str = "manager", *, enter: Callable[[], None] | None = None, **overrides: Any
    ) -> None:
        """``enter``: run in the child before it execs (a cgroup to join, on a shaped cluster)."""
        self.start_role(name, "manager", self.manager_config(**overrides), enter=enter)

    def _kafka(self, role: Role) -> dict[str, Any]:
        """How a role's config reaches the cluster: the plaintext shorthand ``bootstrap``, or
        on a secured cluster the ``kafka:`` section of the role's own user."""
        if self.cluster.security is None:
            return {"bootstrap": self.cluster.bootstrap_servers}
        return {"kafka": self.cluster.kafka_section(role_user(role))}

    # ---- lifecycle ----------------------------------------------------------------------

    def start_role(
        self,
        name: str,
        role: str,
        config: dict[str, Any],
        enter: Callable[[], None] | None = None,
    ) -> None:
        """Start ``kmedic <role>`` under ``name`` with exactly this config."""
        existing = self.roles.get(name)
        if existing is not None and existing.running():
            raise KmedicError(f"{name} is already running (pid {existing.pid})")
        cfg_path = self.workdir / f"{name}.yaml"
        cfg_path.write_text(yaml.safe_dump(config, sort_keys=False))
        proc = RoleProcess(name, cfg_path, self.workdir / f"{name}.log")
        cmd = [
            sys.executable,
            "-m",
            "composition.cli",
            "--log-json",
            role,
            "--config",
            str(cfg_path),
        ]
        proc.pid = process.spawn(cmd, log_path=proc.log_file, tie_to_parent=True, enter=enter)
        self.roles[name] = proc
        log.info("role_started", role=name, pid=proc.pid, log=str(proc.log_file))

    def stop_role(self, name: str, sig: signal.Signals = signal.SIGTERM) -> None:
        """Stop a role on purpose: ``check_running`` no longer expects it to run."""
        proc = self.roles.get(name)
        if proc is not None and proc.pid is not None:
            process.kill(proc.pid, proc.marker, sig)
            proc.pid = None

    def check_running(self) -> None:
        """Fail loudly, naming the log, if a role died on its own."""
        for proc in self.roles.values():
            if proc.pid is not None and not proc.running():
                tail = _tail(proc.log_file)
                raise KmedicError(f"{proc.name} exited; last lines of {proc.log_file}:\n{tail}")

    def stop(self) -> None:
        for name in reversed(list(self.roles)):
            self.stop_role(name)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
