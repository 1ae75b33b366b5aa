"""The kmedic image, built by `make image` and run by testcontainers as each role against the
real local cluster: every container answers its health endpoint (from outside, and through the
image's own HEALTHCHECK command inside) and makes its first output — a stats record (agent), a
load record (stream), a decision in the audit log (manager).

The containers share the host's network, as a role runs beside its broker: the cluster
advertises 127.0.0.1, and each role's port is its config's. Configs and the broker's data
directory are mounted at the paths the configs name.
"""

from __future__ import annotations

import importlib.metadata
import json
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from container_support import IMAGE, Engine, EngineMissing, build_image, container_engine
from helpers import http_get, kafka_conf, read_audit
from required_tools import skip_missing
from streaming_support import create_topic, read_all, unique

from composition.pipeline import Pipeline
from kmedic.localcluster import process

# The first build on a machine (base image, downloads) takes minutes; later ones seconds.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

STARTUP_S = 180  # a cold JVM and Spark session in a container on 2 busy cores


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    try:
        with container_engine(tmp_path_factory.mktemp("engine")) as running:
            yield running
    except EngineMissing as exc:
        skip_missing(f"no container engine: {exc}")


@pytest.fixture(scope="module")
def image(engine: Engine) -> str:
    build_image(engine)
    return IMAGE


class Roles:
    """Role containers, each stopped and removed at the end of the test."""

    def __init__(self, image: str) -> None:
        self.image = image
        self.running: list[Any] = []

    def start(self, role: str, config: Path, mounts: dict[Path, str]) -> Any:
        from testcontainers.core.container import DockerContainer

        container = (
            DockerContainer(self.image)
            .with_command(["--log-json", role, "--config", str(config)])
            .with_kwargs(network_mode="host")
        )
        for path, mode in mounts.items():
            container.with_volume_mapping(str(path), str(path), mode)
        container.start()
        self.running.append(container)
        return container

    def start_command(self, command: list[str]) -> Any:
        """The image running ``command`` instead of kmedic."""
        from testcontainers.core.container import DockerContainer

        container = DockerContainer(self.image).with_kwargs(entrypoint=command)
        container.start()
        self.running.append(container)
        return container

    def stop(self) -> None:
        for container in self.running:
            container.stop()


@pytest.fixture
def roles(image: str, engine: Engine) -> Iterator[Roles]:
    started = Roles(image)
    yield started
    started.stop()


def _writable(path: Path) -> Path:
    """A directory the image's non-root user can write to (the host runs the tests as root)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)
    return path


def _healthy(container: Any, url: str) -> bool:
    """The endpoint answers 200 from outside, and the container's own HEALTHCHECK command (as
    the engine would run it) says healthy from inside."""
    status, _, _ = http_get(url) if _answers(url) else (0, "", "")
    if status != 200:
        return False
    test = container.get_wrapped_container().attrs["Config"]["Healthcheck"]["Test"]
    assert test[0] == "CMD", f"HEALTHCHECK should be an exec form, not {test}"
    code, output = container.exec(test[1:])
    assert code == 0, f"the HEALTHCHECK {test[1:]} failed inside the container: {output!r}"
    return True


def _answers(url: str) -> bool:
    port = int(url.rsplit(":", 1)[1].split("/", 1)[0])
    return process.port_open(port)


def _logs(container: Any) -> str:
    out, err = container.get_logs()
    return (out + err).decode(errors="replace")[-3000:]


def _until(check: Callable[[], Any], container: Any, what: str, timeout: float = STARTUP_S) -> Any:
    """Poll ``check`` until it is truthy; fail naming ``what`` with the container's log."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(2)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}; its log:\n{_logs(container)}")


def test_the_image_runs_each_role_against_the_cluster(
    healthy_cluster: Any, roles: Roles, tmp_path: Path
) -> None:
    cluster = healthy_cluster
    bootstrap = cluster.bootstrap_servers
    workdir = tmp_path / "image"
    pipeline = Pipeline(cluster, _writable(workdir), cluster_name=unique("image"))
    stats, loads, broker_loads = unique("img.stats"), unique("img.loads"), unique("img.bloads")
    actions = unique("img.actions")
    create_topic(bootstrap, stats, partitions=3, replication=2)
    agent_port, stream_port, manager_port = process.free_ports(3)
    data_dir = cluster.data_dir(1)

    agent_cfg = workdir / "agent.yaml"
    agent_cfg.write_text(
        yaml.safe_dump(
            pipeline.agent_config(1, 2.0, topic=stats, metrics_port=agent_port, create_topic=False)
        )
    )
    agent = roles.start("agent", agent_cfg, {workdir: "ro", data_dir: "ro"})

    stream_cfg = workdir / "stream.yaml"
    stream_topics = {
        "brokerstats": stats,
        "replica_loads": loads,
        "broker_loads": broker_loads,
        "dlq": unique("img.dlq"),
        "replication_factor": 2,
        "partitions": 2,
    }
    stream_cfg.write_text(
        yaml.safe_dump(
            pipeline.stream_config(
                topics=stream_topics,
                checkpoint_location=str(_writable(workdir / "checkpoint")),
                metrics_port=stream_port,
                metrics_host="127.0.0.1",
            )
        )
    )
    stream = roles.start("stream", stream_cfg, {workdir: "rw"})

    manager_cfg = workdir / "manager.yaml"
    state = _writable(workdir / "manager-state")
    manager_topics = {
        "brokerstats": stats,
        "replica_loads": loads,
        "broker_loads": broker_loads,
        "actions": actions,
    }
    manager_cfg.write_text(
        yaml.safe_dump(
            pipeline.manager_config(
                topics=manager_topics,
                snapshot_path=str(state / "snapshot.json"),
                audit={"spool_dir": str(state / "spool")},
                http={"port": manager_port},
            )
        )
    )
    manager = roles.start("manager", manager_cfg, {workdir: "rw"})

    for name, container, url in (
        ("agent", agent, f"http://127.0.0.1:{agent_port}/metrics"),
        ("stream", stream, f"http://127.0.0.1:{stream_port}/metrics"),
        ("manager", manager, f"http://127.0.0.1:{manager_port}/healthz"),
    ):
        check = partial(_healthy, container, url)
        _until(check, container, f"the {name}'s health at {url}")

    def stats_of_broker_1() -> bool:
        records = read_all(bootstrap, stats) if _topic_has_records(bootstrap, stats) else []
        return any(json.loads(m.value()).get("broker_id") == 1 for m in records)

    _until(stats_of_broker_1, agent, "the agent's first stats record")
    _until(lambda: _topic_has_records(bootstrap, loads), stream, "the stream's first load")
    decisions = _until(
        lambda: [r for r in read_audit(bootstrap, actions) if r.kind == "decision"],
        manager,
        "the manager's first decision",
    )
    assert decisions[0].cluster == pipeline.cluster_name
    assert decisions[0].summary, "a decision says what was decided"


def test_the_image_runs_as_a_user_without_build_tools_and_says_what_it_is(
    roles: Roles,
) -> None:
    import docker  # type: ignore[import-untyped]

    version = importlib.metadata.version("kafka-medic")
    config = docker.from_env().images.get(roles.image).attrs["Config"]
    assert config["User"] == "kmedic"
    assert config["Entrypoint"] == ["/opt/kmedic/.venv/bin/kmedic"]
    labels = config["Labels"]
    assert labels["org.opencontainers.image.title"] == "kmedic"
    assert labels["org.opencontainers.image.version"] == version
    probe = roles.start_command(["sh", "-c", "sleep 60"])
    code, output = probe.exec(["sh", "-c", "id -u && command -v java && command -v python3"])
    assert code == 0, output
    uid, java, python = output.decode().split()
    assert uid != "0" and (java, python) == ("/usr/bin/java", "/opt/kmedic/.venv/bin/python3")
    build_tools = "for t in mvn javac gcc make; do command -v $t; done; true"
    _, output = probe.exec(["sh", "-c", build_tools])
    assert output.decode().split() == [], "build tools in the runtime image"
    code, output = probe.exec(["kmedic", "--version"])
    assert (code, output.decode().strip()) == (0, f"kmedic {version}")


def _topic_has_records(bootstrap: str, topic: str) -> bool:
    from confluent_kafka.admin import AdminClient

    meta = AdminClient(kafka_conf(bootstrap)).list_topics(timeout=10)
    if topic not in meta.topics:
        return False
    return bool(read_all(bootstrap, topic))
