"""A real Prometheus server beside the local roles: it scrapes their /metrics and evaluates the
shipped alert rules (configs/prometheus/alerts.yml), so a run can ask which alerts are active
on real scraped data, and afterwards which ever fired (the soak's pages; the tests' alerts).

The server is Debian's ``prometheus`` package, on the machine's PATH; each run has its own
configuration and data directory in its work directory."""

from __future__ import annotations

import json
import shutil
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kmedic.errors import KmedicError
from kmedic.localcluster import process

ALERT_RULES = Path(__file__).resolve().parents[1] / "configs" / "prometheus" / "alerts.yml"
SERVER = "prometheus"


def prometheus_missing() -> str | None:
    """None when the server binary is installed; otherwise what is missing."""
    if shutil.which(SERVER) is None:
        return "the prometheus server is not installed (Debian's prometheus package)"
    return None


@dataclass(frozen=True)
class FiredAlert:
    """An alert that reached *firing* at least once: its name, labels and when it first did
    (seconds since the epoch, as Prometheus stamps it)."""

    name: str
    labels: dict[str, str]
    first_firing_s: float

    def sentence(self, since_s: float) -> str:
        labels = ", ".join(f"{k}={v}" for k, v in sorted(self.labels.items()))
        return f"{self.name}{{{labels}}} firing from +{self.first_firing_s - since_s:.0f} s"


class PrometheusServer:
    """Scrapes ``targets`` (host:port of /metrics) and evaluates the rules every second."""

    def __init__(
        self,
        workdir: Path,
        targets: list[str],
        rules: Path = ALERT_RULES,
        jobs: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """``jobs``: more scrape jobs by name, each a Prometheus scrape_config without its
        job_name (scheme, tls_config, basic_auth, static_configs...)."""
        self.workdir = workdir
        self.targets = targets
        self.rules = rules
        self.jobs = jobs or {}
        self.port = process.free_ports(1)[0]
        self.config = workdir / "prometheus.yml"
        self.log = workdir / "prometheus.log"
        self.pid: int | None = None
        self.started_at: float | None = None  # seconds since the epoch, once ready

    def targets_by_job(self) -> dict[str, set[str]]:
        """The static targets of each scrape job, as configured."""
        out = {"kmedic-manager": set(self.targets)}
        for name, job in self.jobs.items():
            for group in job.get("static_configs", ()):
                out.setdefault(name, set()).update(group.get("targets", ()))
        return out

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> PrometheusServer:
        if (missing := prometheus_missing()) is not None:
            raise KmedicError(missing)
        self.workdir.mkdir(parents=True, exist_ok=True)
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(self.rules)],
            "scrape_configs": [
                {"job_name": "kmedic-manager", "static_configs": [{"targets": self.targets}]},
                *({"job_name": name, **job} for name, job in self.jobs.items()),
            ],
        }
        self.config.write_text(yaml.safe_dump(config))
        cmd = [
            SERVER,
            f"--config.file={self.config}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self.pid = process.spawn(cmd, log_path=self.log, tie_to_parent=True)
        process.wait_until(
            self._ready, timeout=timeout, what="Prometheus to be ready", log_path=self.log
        )
        self.started_at = time.time()
        return self

    def stop(self) -> None:
        if self.pid is not None:
            process.kill(self.pid, str(self.config))
            self.pid = None

    def running(self) -> bool:
        return process.is_running(self.pid, str(self.config))

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def _api(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as resp:
            body = json.loads(resp.read())
        if body.get("status") != "success":
            raise KmedicError(f"Prometheus at {self.url} answered {path} with {body}")
        return body["data"]

    def alerts(self) -> list[dict[str, Any]]:
        """Active alerts (pending or firing) with their labels and state."""
        return list(self._api("/api/v1/alerts")["alerts"])

    def active(self, name: str, **labels: str) -> list[dict[str, Any]]:
        return [
            a
            for a in self.alerts()
            if a["labels"].get("alertname") == name
            and all(a["labels"].get(k) == v for k, v in labels.items())
        ]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result."""
        return list(self._api("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))["result"])

    def fired(self, since_s: float) -> list[FiredAlert]:
        """Every alert that was *firing* at some evaluation since ``since_s`` (seconds since
        the epoch), from the ``ALERTS`` series Prometheus keeps, first firing first."""
        window = max(1, int(time.time() - since_s) + 1)
        found = []
        for series in self.query(f'ALERTS{{alertstate="firing"}}[{window}s]'):
            labels = {
                k: v
                for k, v in series["metric"].items()
                if k not in ("__name__", "alertname", "alertstate")
            }
            first = min(float(t) for t, _ in series["values"])
            found.append(FiredAlert(series["metric"]["alertname"], labels, first))
        return sorted(found, key=lambda a: a.first_firing_s)

    def scraped(self, since_s: float) -> dict[str, set[str]]:
        """The targets scraped at least once since ``since_s``, by job: a judgement of the
        alerts means something only where the metrics they read were there."""
        window = max(1, int(time.time() - since_s) + 1)
        out: dict[str, set[str]] = {}
        for series in self.query(f"max_over_time(up[{window}s]) == 1"):
            labels = series["metric"]
            out.setdefault(labels.get("job", ""), set()).add(labels.get("instance", ""))
        return out
