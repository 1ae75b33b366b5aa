"""A request checked when it is made, from the command line (issue 72.1): with a manager
config (`--config`) or a bootstrap (`--bootstrap`, $KMEDIC_BOOTSTRAP) the command knows the
Kafka cluster, reads its brokers and partitions once, and refuses a request that could never
be met by the rules the API and the leader apply (manager/analyzer/request_check.py) -
nothing is stored, exit 3 with the reason.

Without either, or when Kafka does not answer within REACH_MS, the request is stored and
the leading manager checks it at its next cycle (a hopeless one fails with the reason there;
`--wait` shows it). The line on stderr says which.

The placement commands (`kmedic domains|groups ... create|update --brokers`) check the brokers
they name the same way (the API checks them against the manager's snapshot): a typo'd broker
id was stored and matched nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Collection

from kmedic.errors import KmedicError, Refused
from kmedic.kafka_admin import REACH_MS, connect_admin, describe_partitions
from kmedic.kafka_client import Cluster
from kmedic.metadata import parse_nodes
from manager.analyzer.request_check import (
    DEFAULT_POLICY,
    Asked,
    ClusterFacts,
    never_met,
    unknown_brokers,
)
from manager.model.policy import Policy


def add_check(
    p: argparse.ArgumentParser, then: str = "the leader checks it at its next cycle"
) -> None:
    p.add_argument(
        "--bootstrap",
        default=os.environ.get("KMEDIC_BOOTSTRAP") or os.environ.get("KMEDIC_BOOTSTRAP_SERVERS"),
        help="the Kafka cluster (plaintext), to refuse at once what could never be met "
        "(default: $KMEDIC_BOOTSTRAP; --config gives it with its security settings); "
        f"without either {then}",
    )


def read_facts(
    cluster: Cluster, later: str, policy: Policy = DEFAULT_POLICY
) -> ClusterFacts | None:
    """The cluster's facts (judged by ``policy``: the manager config's, else the default);
    None (said on stderr, with what happens ``later``) when Kafka does not answer."""
    client = None
    try:
        client = connect_admin(
            cluster,
            client_id="kmedic-request-check",
            timeout_ms=15_000,
            reach_ms=REACH_MS,
        )
        racks = {b: node.rack for b, node in parse_nodes(client.describe_cluster()).items()}
        return ClusterFacts.of_table(racks, describe_partitions(client), policy)
    except Exception as exc:  # kafka-python raises several unrelated types
        why = str(exc) if isinstance(exc, KmedicError) else f"the cluster's metadata: {exc!r}"
        print(f"kmedic: not checked at once ({why}); {later}", file=sys.stderr)
        return None
    finally:
        if client is not None:
            client.close()


def check_at_once(cluster: Cluster | None, asked: Asked, policy: Policy = DEFAULT_POLICY) -> bool:
    """Refused when ``asked`` can never be met; True when it was checked against ``cluster``
    (the manager config's, else --bootstrap), False when it goes to the leader unchecked.
    The rack rule needs the policy: the manager config's (without one, the default, which
    enforces none)."""
    later = "the leading manager checks it at its next cycle"
    facts = read_facts(cluster, later, policy) if cluster else None
    if facts is None:
        return False
    why = never_met(asked, facts)
    if why is not None:
        raise Refused(f"refused, nothing stored: {why}")
    return True


def check_brokers(cluster: Cluster | None, what: str, named: Collection[int]) -> None:
    """A placement record naming brokers the cluster does not have is an error (nothing
    stored); unchecked (said on stderr) when no cluster is given or it does not answer."""
    later = "stored as given; a broker the cluster does not have matches nothing"
    if not named:
        return
    if not cluster:
        print(f"kmedic: brokers not checked (no --bootstrap or --config); {later}", file=sys.stderr)
        return
    facts = read_facts(cluster, later)
    if facts is None:
        return
    why = unknown_brokers(named, facts)
    if why is not None:
        raise KmedicError(f"{what} not stored: {why}")
