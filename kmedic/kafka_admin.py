"""One way to open kafka-python's admin client (the calls confluent-kafka lacks:
reassignments, log dirs), with its many error types turned into one clear KmedicError."""

from __future__ import annotations

from typing import Any

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster, client_settings


def connect_admin(
    cluster: Cluster,
    *,
    client_id: str,
    timeout_ms: int,
    error: type[KmedicError] = KmedicError,
) -> Any:
    """A connected KafkaAdminClient, or ``error`` naming the cluster that could not be reached."""
    from kafka import KafkaAdminClient

    settings = client_settings(cluster)
    bootstrap = settings.bootstrap
    try:
        # The bootstrap bound matters when every broker is down: its default is 30 s.
        return KafkaAdminClient(
            **settings.kafka_python(),
            client_id=client_id,
            request_timeout_ms=timeout_ms,
            bootstrap_timeout_ms=timeout_ms,
        )
    except Exception as exc:  # kafka-python raises several unrelated types
        raise error(f"cannot reach the cluster at {bootstrap}: {exc}") from exc
