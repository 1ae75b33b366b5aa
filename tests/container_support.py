"""A container engine for the tests, reached through the Docker API as testcontainers reaches it.

Docker when an engine answers; otherwise podman's Docker-compatible API, served for the test
session by ``podman system service`` on a socket of its own and with the project's
configs/podman/containers.conf, so nothing on the host is reconfigured (scripts/image.py sets
podman up the same way). Where neither can run, ``EngineMissing`` says why and the tests that
need an engine skip with that reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kmedic.localcluster import process
from kmedic.paths import SOURCE_ROOT

CONTAINERS_CONF = SOURCE_ROOT / "configs" / "podman" / "containers.conf"
IMAGE = "kmedic:latest"


class EngineMissing(Exception):
    """No container engine can run here; the message says what is missing."""


@dataclass(frozen=True)
class Engine:
    name: str  # docker or podman
    docker_host: str  # the Docker API's address, as DOCKER_HOST spells it


def _docker_answers(base_url: str | None) -> bool:
    import docker  # type: ignore[import-untyped]

    try:
        client = docker.DockerClient(base_url=base_url) if base_url else docker.from_env()
        return bool(client.ping())
    except Exception:  # any failure means no usable engine at this address
        return False


@contextmanager
def container_engine(workdir: Path, timeout_s: float = 60.0) -> Iterator[Engine]:
    """A Docker API for the duration of the block, with DOCKER_HOST pointing at it and
    testcontainers' reaper off (its image cannot be pulled here; every test removes its own
    containers)."""
    if _docker_answers(None):
        engine = Engine("docker", os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock"))
        with _environment(engine):
            try:
                yield engine
            finally:
                _remove_this_sessions_containers(engine)
        return
    missing = [tool for tool in ("podman", "runc") if shutil.which(tool) is None]
    if missing:
        raise EngineMissing(
            f"no Docker engine answers and {' and '.join(missing)} is not installed "
            "(`make bootstrap` installs Debian's podman and runc where apt-get runs as root)"
        )
    env = {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}
    info = subprocess.run(["podman", "info"], capture_output=True, text=True, env=env)
    if info.returncode != 0:
        raise EngineMissing(f"podman cannot run here: {info.stderr.strip()[-300:]}")
    socket = workdir / "podman.sock"
    host = f"unix://{socket}"
    log = workdir / "podman-service.log"
    pid = process.spawn(
        ["podman", "system", "service", "--time=0", host], log_path=log, env=env, tie_to_parent=True
    )
    try:
        deadline = time.monotonic() + timeout_s
        while not _docker_answers(host):
            if time.monotonic() > deadline or not process.is_running(pid, str(socket)):
                raise EngineMissing(f"podman's API did not answer on {socket}; see {log}")
            time.sleep(0.2)
        engine = Engine("podman", host)
        with _environment(engine, CONTAINERS_CONF=str(CONTAINERS_CONF)):
            try:
                yield engine
            finally:
                _remove_this_sessions_containers(engine)
    finally:
        process.kill(pid, str(socket))


def _remove_this_sessions_containers(engine: Engine) -> None:
    """Every container this test session started and a failing test left behind: without the
    reaper nothing else would remove them, and their processes would outlive the session."""
    import docker
    from testcontainers.core.labels import LABEL_SESSION_ID, SESSION_ID

    client = docker.DockerClient(base_url=engine.docker_host)
    label = f"{LABEL_SESSION_ID}={SESSION_ID}"
    for container in client.containers.list(all=True, filters={"label": label}):
        container.remove(force=True)


@contextmanager
def _environment(engine: Engine, **extra: str) -> Iterator[None]:
    values = {
        "DOCKER_HOST": engine.docker_host,
        "TESTCONTAINERS_RYUK_DISABLED": "true",
        **extra,
    }
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    from testcontainers.core.config import testcontainers_config

    ryuk = testcontainers_config.ryuk_disabled
    testcontainers_config.ryuk_disabled = True  # read at import; the import may have come first
    try:
        yield
    finally:
        testcontainers_config.ryuk_disabled = ryuk
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def build_image(engine: Engine, *args: str) -> None:
    """`make image`'s build (``--kafka``: the test cluster's node image) with the engine's own
    command line; cached layers make a rebuild after a change of code seconds. Its output on
    failure."""
    env = dict(os.environ)
    if engine.name == "podman":
        env.pop("DOCKER_HOST")  # the docker command must not take podman's socket for an engine
    proc = subprocess.run(
        [sys.executable, str(SOURCE_ROOT / "scripts" / "image.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        raise AssertionError(f"scripts/image.py {' '.join(args)} failed:\n{tail}")
