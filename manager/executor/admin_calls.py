"""The executor's Admin API client, and how one call survives a dead broker: retried with a
fresh client, whose new metadata stops pointing at it (kafka-python would otherwise keep its
cached controller for minutes), for up to ``admin_retry_s`` - longer than the broker session
timeout, after which the controller has fenced the dead broker."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from kafka.admin import KafkaAdminClient
from kafka.errors import KafkaError as KpKafkaError

from kmedic.errors import KmedicError
from kmedic.kafka_admin import connect_admin
from kmedic.kafka_client import Cluster
from kmedic.logging import get_logger

log = get_logger(__name__)


class AdminCalls:
    """One Admin client of the executor's, replaced whenever a call fails."""

    def __init__(self, bootstrap: Cluster, request_timeout_s: float, retry_s: float) -> None:
        self._bootstrap = bootstrap
        self._timeout_ms = int(request_timeout_s * 1000)
        self._retry_s = retry_s
        self.client = self._connect()

    def _connect(self) -> KafkaAdminClient:
        client: KafkaAdminClient = connect_admin(
            self._bootstrap, client_id="kmedic-executor", timeout_ms=self._timeout_ms
        )
        return client

    def __call__(self, call: Callable[[KafkaAdminClient], Any], what: str) -> Any:
        """Run one Admin API call, retried as the module says; KmedicError naming ``what``
        once the retries are spent."""
        deadline = time.monotonic() + self._retry_s
        attempt = 0
        while True:
            attempt += 1
            try:
                return call(self.client)
            except KpKafkaError as exc:
                if time.monotonic() >= deadline:
                    raise KmedicError(f"cannot {what}: {exc!r}") from exc
                log.warning("admin_call_retry", call=what, attempt=attempt, error=repr(exc))
                time.sleep(min(float(attempt), 3.0))
                with contextlib.suppress(Exception):
                    self.client.close()
                self.client = self._connect()

    def close(self) -> None:
        self.client.close()
