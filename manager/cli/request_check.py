"""A request checked when it is made, from the command line (issue 72.1): with a manager
config (`--config`) or a bootstrap (`--bootstrap`, $KMEDIC_BOOTSTRAP) the command knows the
Kafka cluster, reads its brokers and partitions once, and refuses a request that could never
be met by the rules the API and the leader apply (manager/analyzer/request_check.py) -
nothing is stored, exit 3 with the reason.

Without either, or when Kafka does not answer within REACH_MS, the request is stored and
the leading manager checks it at its next cycle (a hopeless one fails with the reason there;
`--wait` shows it). The line on stderr says which.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kmedic.errors import KmedicError, Refused
from kmedic.kafka_admin import REACH_MS, connect_admin, describe_partitions
from kmedic.kafka_client import Cluster
from kmedic.metadata import parse_nodes
from manager.analyzer.request_check import Asked, ClusterFacts, never_met


def read_facts(cluster: Cluster) -> ClusterFacts | None:
    """The cluster's facts; None (said on stderr) when Kafka does not answer."""
    try:
        client = connect_admin(
            cluster,
            client_id="kmedic-request-check",
            timeout_ms=15_000,
            reach_ms=REACH_MS,
        )
    except KmedicError as exc:
        print(
            f"kmedic: not checked at once ({exc}); the leading manager checks it at its next cycle",
            file=sys.stderr,
        )
        return None
    try:
        brokers = parse_nodes(client.describe_cluster())
        return ClusterFacts.of_table(brokers, describe_partitions(client))
    except Exception as exc:  # kafka-python raises several unrelated types
        print(
            f"kmedic: not checked at once (the cluster's metadata: {exc!r}); the leading "
            "manager checks it at its next cycle",
            file=sys.stderr,
        )
        return None
    finally:
        client.close()


def check_at_once(config: Path | None, bootstrap: str | None, asked: Asked) -> bool:
    """Refused when ``asked`` can never be met; True when it was checked against the
    cluster (the manager config's, else ``bootstrap``), False when it goes to the leader
    unchecked."""
    cluster: Cluster | None = bootstrap
    if config is not None:
        from manager.config import load_manager_config

        cluster = load_manager_config(config).cluster_client
    facts = read_facts(cluster) if cluster else None
    if facts is None:
        return False
    why = never_met(asked, facts)
    if why is not None:
        raise Refused(f"refused, nothing stored: {why}")
    return True
