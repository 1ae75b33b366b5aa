"""A Spark standalone cluster on this machine, from PySpark's own distribution: one master and
N workers (``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``) on
loopback, each daemon in its own process group, all stopped on exit (executors included).

Used by the Spark-cluster test and by ``bench/bench_streaming.py --standalone-workers N``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kmedic.errors import KmedicError
from kmedic.localcluster.process import LIGHT_JVM_OPTIONS, free_ports

EXECUTOR = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass
class StandaloneCluster:
    master_url: str
    ui_url: str
    home: Path
    env: dict[str, str]

    def state(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.ui_url + "/json/", timeout=5) as reply:
            state: dict[str, Any] = json.loads(reply.read())
        return state

    def executors(self) -> list[int]:
        """PIDs of executor JVMs launched by this cluster's workers."""
        found = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
                cwd = os.readlink(proc / "cwd")
            except OSError:
                continue
            if EXECUTOR in cmdline and cwd.startswith(str(self.home)):
                found.append(int(proc.name))
        return found

    def executor_dirs(self) -> list[Path]:
        """One directory per executor any worker launched, killed ones included."""
        return sorted(self.home.glob("work-*/app-*/*"))

    def logs(self) -> str:
        files = sorted(self.home.glob("*.log"))
        return "\n".join(f"--- {f.name}\n{f.read_text()[-1500:]}" for f in files)


def _daemon(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stopped with everything it started
        )


@contextmanager
def standalone_cluster(
    home: Path, workers: int = 2, cores: int = 1, memory: str = "768m", timeout_s: float = 90
) -> Iterator[StandaloneCluster]:
    """Start a master and ``workers`` workers (``cores`` and ``memory`` each) under ``home``;
    yields once every worker is alive, stops all of it on exit."""
    home.mkdir(parents=True, exist_ok=True)
    port, ui, *worker_ui = free_ports(2 + workers)
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(home / "logs"),
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": " ".join(LIGHT_JVM_OPTIONS),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    master = f"spark://127.0.0.1:{port}"
    procs = [
        _daemon(
            env,
            home / "master.log",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)),
        )
    ]
    for i, web in enumerate(worker_ui):
        work = home / f"work-{i}"
        work.mkdir(exist_ok=True)
        procs.append(
            _daemon(
                env,
                home / f"worker-{i}.log",
                "org.apache.spark.deploy.worker.Worker",
                *("--host", "127.0.0.1", "--cores", str(cores), "--memory", memory),
                *("--webui-port", str(web), "--work-dir", str(work), master),
            )
        )
    cluster = StandaloneCluster(master, f"http://127.0.0.1:{ui}", home, env)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if any(p.poll() is not None for p in procs):
                raise KmedicError(f"a Spark daemon exited while starting:\n{cluster.logs()}")
            try:
                if cluster.state().get("aliveworkers") == workers:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise KmedicError(
                    f"no Spark master with {workers} alive workers after {timeout_s:.0f} s:\n"
                    f"{cluster.logs()}"
                )
            time.sleep(0.5)
        yield cluster
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=30)
        for pid in cluster.executors():  # executors outliving their worker
            os.kill(pid, signal.SIGKILL)
