"""A real Prometheus server for the end-to-end tests: it scrapes the manager and evaluates the
shipped alert rules (configs/prometheus/alerts.yml), so a test can ask which alerts are
active on real scraped data, not only whether promtool's synthetic series fire them."""

from __future__ import annotations

import json
import shutil
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml
from required_tools import skip_missing

from kmedic.localcluster import process

ALERT_RULES = Path(__file__).resolve().parents[1] / "configs" / "prometheus" / "alerts.yml"


def prometheus_missing() -> str | None:
    """None when the server binary is installed; otherwise what is missing."""
    if shutil.which("prometheus") is None:
        return "the prometheus server is not installed (Debian's prometheus package)"
    return None


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

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> PrometheusServer:
        if (missing := prometheus_missing()) is not None:
            skip_missing(missing)
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
            "prometheus",
            f"--config.file={self.config}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
        ]
        self.pid = process.spawn(cmd, log_path=self.log, tie_to_parent=True)
        process.wait_until(
            self._ready, timeout=timeout, what="Prometheus to be ready", log_path=self.log
        )
        return self

    def stop(self) -> None:
        if self.pid is not None:
            process.kill(self.pid, str(self.config))
            self.pid = None

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def _api(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as resp:
            body = json.loads(resp.read())
        assert body["status"] == "success", body
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
        """An instant query's vector result."""
        return list(self._api("/api/v1/query?" + urllib.parse.urlencode({"query": expr}))["result"])
