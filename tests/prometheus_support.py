"""A real Prometheus server for the tests (composition.prometheus): it scrapes the manager and
evaluates the shipped alert rules, so a test can ask which alerts are active on real scraped
data, not only whether promtool's synthetic series fire them. Without the server, the test
that starts one is skipped, naming what is missing."""

from __future__ import annotations

from required_tools import skip_missing

from composition.prometheus import ALERT_RULES, prometheus_missing
from composition.prometheus import PrometheusServer as _Server

__all__ = ["ALERT_RULES", "PrometheusServer", "prometheus_missing"]


class PrometheusServer(_Server):
    def start(self, timeout: float = 60) -> PrometheusServer:
        if (missing := prometheus_missing()) is not None:
            skip_missing(missing)
        super().start(timeout)
        return self
