"""What each kmedic identity needs from Kafka's authorizer, least privilege, in one place: the
secured local cluster grants exactly this, docs/security.md prints it, and ``kafka_acls_args``
turns it into the arguments of Kafka's own ``kafka-acls.sh``.

Each grant says why. The topic names are kmedic's defaults; a deployment that renames a topic
(``topics:`` in a role's config) grants the same operations on its name instead.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

Role = Literal["agent", "stream", "manager"]
ROLES: tuple[Role, ...] = ("agent", "stream", "manager")

BROKERSTATS = "kmedic.brokerstats"
DLQ = "kmedic.brokerstats.dlq"
REPLICA_LOADS = "kmedic.replica-loads"
BROKER_LOADS = "kmedic.broker-loads"
ACTIONS = "kmedic.actions"


@dataclass(frozen=True)
class Grant:
    """Allow ``operations`` on one resource (``name`` is a literal name, a prefix, or ``*``)."""

    resource: Literal["cluster", "topic", "group"]
    name: str
    operations: tuple[str, ...]
    why: str
    prefixed: bool = False


CLUSTER = "kafka-cluster"

GRANTS: dict[Role, tuple[Grant, ...]] = {
    "agent": (
        Grant(
            "cluster",
            CLUSTER,
            ("Describe",),
            "describe the cluster, its log directories and running reassignments",
        ),
        Grant("topic", "*", ("Describe",), "see every partition this broker holds"),
        Grant(
            "topic",
            BROKERSTATS,
            ("Describe", "Write", "Create"),
            "publish broker stats (Create only while the topic does not exist yet)",
        ),
    ),
    "stream": (
        Grant("topic", BROKERSTATS, ("Describe", "Read"), "read the agents' stats"),
        Grant(
            "topic",
            REPLICA_LOADS,
            ("Describe", "Write", "Create", "DescribeConfigs"),
            "publish per-replica loads (a compacted topic it creates and checks)",
        ),
        Grant(
            "topic",
            BROKER_LOADS,
            ("Describe", "Write", "Create", "DescribeConfigs"),
            "publish per-broker loads",
        ),
        Grant(
            "topic",
            DLQ,
            ("Describe", "Write", "Create", "DescribeConfigs"),
            "park malformed stats records",
        ),
        Grant(
            "group",
            "spark-kafka-source-",
            ("Describe", "Read"),
            "the consumer groups Spark's Kafka source names for itself (never committed)",
            prefixed=True,
        ),
    ),
    "manager": (
        Grant(
            "cluster",
            CLUSTER,
            ("Describe", "Alter", "DescribeConfigs", "AlterConfigs"),
            "reassign partitions (Alter) and set and clear brokers' replication throttles",
        ),
        Grant(
            "topic",
            "*",
            ("Describe", "DescribeConfigs", "AlterConfigs"),
            "see every partition; set and clear the throttled replicas of topics it moves",
        ),
        Grant("topic", REPLICA_LOADS, ("Read",), "read per-replica loads"),
        Grant("topic", BROKER_LOADS, ("Read",), "read per-broker loads"),
        Grant("topic", BROKERSTATS, ("Read",), "read the agents' stats"),
        Grant(
            "topic",
            ACTIONS,
            ("Describe", "Write", "Create", "Read"),
            "write the audit log (and read it: `kmedic actions tail --config`)",
        ),
        Grant(
            "group",
            "kmedic-",
            ("Describe", "Read"),
            "the consumer groups its readers name (assigned partitions, never committed)",
            prefixed=True,
        ),
    ),
}


def kafka_acls_args(role: Role, principal: str) -> list[list[str]]:
    """One ``kafka-acls.sh --add`` argument list per grant of ``role`` (without
    ``--bootstrap-server`` and ``--command-config``, which are the operator's)."""
    commands = []
    for grant in GRANTS[role]:
        args = ["--add", "--allow-principal", principal]
        for operation in grant.operations:
            args += ["--operation", operation]
        if grant.resource == "cluster":
            args.append("--cluster")
        else:
            args += [f"--{grant.resource}", grant.name]
            if grant.prefixed:
                args += ["--resource-pattern-type", "prefixed"]
        commands.append(args)
    return commands


def kafka_acls_lines(role: Role, principal: str) -> list[str]:
    """The shell lines docs/security.md shows (``$BOOTSTRAP`` and ``admin.properties`` are the
    operator's: where the cluster is, and how an admin authenticates to it)."""
    prefix = "kafka-acls.sh --bootstrap-server $BOOTSTRAP --command-config admin.properties"
    return [f"{prefix} {shlex.join(args)}" for args in kafka_acls_args(role, principal)]
