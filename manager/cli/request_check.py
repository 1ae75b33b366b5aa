"""A request checked when it is made, from the command line (issue 72.1): with a manager
config (`--config`) the command knows the Kafka cluster, reads its brokers and partitions
once, and refuses a request that could never be met by the rules the API and the leader
apply (manager/analyzer/request_check.py) - nothing is stored, exit 3 with the reason.

Without a config, or when Kafka does not answer within REACH_MS, the request is stored and
the leading manager checks it at its next cycle (a hopeless one fails with the reason there;
`--wait` shows it). The line on stderr says which.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kmedic.errors import KmedicError, Refused
from kmedic.kafka_admin import REACH_MS, connect_admin, describe_partitions
from kmedic.metadata import parse_nodes
from manager.analyzer.request_check import Asked, ClusterFacts, never_met


def read_facts(config: Path) -> ClusterFacts | None:
    """The cluster's facts read through the config's Kafka settings; None (said on stderr)
    when Kafka does not answer."""
    from manager.config import load_manager_config

    cfg = load_manager_config(config)
    try:
        client = connect_admin(
            cfg.cluster_client,
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


def check_at_once(config: Path | None, asked: Asked) -> bool:
    """Refused when ``asked`` can never be met; True when it was checked against the
    cluster, False when it goes to the leader unchecked."""
    facts = read_facts(config) if config is not None else None
    if facts is None:
        return False
    why = never_met(asked, facts)
    if why is not None:
        raise Refused(f"refused, nothing stored: {why}")
    return True
