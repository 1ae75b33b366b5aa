"""The least-privilege grants of each role: well formed, actually least, and what the docs say."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import AclOperation  # type: ignore[attr-defined]

from kmedic.kafka_acls import GRANTS, ROLES, Role, kafka_acls_args, kafka_acls_lines
from kmedic.localcluster.security import role_user

DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"
KAFKA_OPERATIONS = {
    "Read",
    "Write",
    "Create",
    "Delete",
    "Alter",
    "Describe",
    "ClusterAction",
    "DescribeConfigs",
    "AlterConfigs",
    "IdempotentWrite",
}


@pytest.mark.parametrize("role", ROLES)
def test_every_operation_is_one_kafka_knows(role: Role) -> None:
    for grant in GRANTS[role]:
        assert set(grant.operations) <= KAFKA_OPERATIONS, grant
        assert grant.why
        for operation in grant.operations:
            snake = "".join(f"_{c}" if c.isupper() else c for c in operation).lstrip("_")
            assert AclOperation[snake.upper()]


def test_no_role_may_delete_or_do_all() -> None:
    for role in ROLES:
        for grant in GRANTS[role]:
            assert not {"Delete", "All", "ClusterAction"} & set(grant.operations), (role, grant)


def ops(role: Role, resource: str, name: str) -> set[str]:
    return {
        op for g in GRANTS[role] if g.resource == resource and g.name == name for op in g.operations
    }


def test_only_the_manager_moves_data_or_changes_configs() -> None:
    for role in ("agent", "stream"):
        for grant in GRANTS[role]:  # type: ignore[index]
            assert not {"Alter", "AlterConfigs"} & set(grant.operations), (role, grant)
    assert {"Alter", "AlterConfigs"} <= ops("manager", "cluster", "kafka-cluster")


def test_only_the_manager_writes_the_audit_log_and_only_the_stream_writes_loads() -> None:
    writers = {
        role: {g.name for g in GRANTS[role] if "Write" in g.operations and g.resource == "topic"}
        for role in ROLES
    }
    assert writers == {
        "agent": {"kmedic.brokerstats"},
        "stream": {"kmedic.replica-loads", "kmedic.broker-loads", "kmedic.brokerstats.dlq"},
        "manager": {"kmedic.actions"},
    }


def test_args_follow_kafka_acls_syntax() -> None:
    args = kafka_acls_args("stream", "User:s")
    assert args[0] == [
        "--add",
        "--allow-principal",
        "User:s",
        "--operation",
        "Describe",
        "--operation",
        "Read",
        "--topic",
        "kmedic.brokerstats",
    ]
    assert args[-1][-4:] == [
        "--group",
        "spark-kafka-source-",
        "--resource-pattern-type",
        "prefixed",
    ]
    assert kafka_acls_args("agent", "User:a")[0][-1] == "--cluster"


@pytest.mark.parametrize("role", ROLES)
def test_docs_show_exactly_these_grants(role: Role) -> None:
    text = DOCS.read_text()
    for line in kafka_acls_lines(role, f"User:{role_user(role)}"):
        assert line in text, f"docs/security.md lacks: {line}"
