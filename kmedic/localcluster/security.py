"""The secrets of a secured local cluster (``kmedic cluster up --secure``): a throwaway CA and
the brokers' certificate, and SCRAM users created when the storage is formatted.

Every file lives under ``<workdir>/security`` and is owner-readable only. Users:

- ``admin``: what brokers use between themselves, and the operator's identity (super user);
- ``kmedic-agent``, ``kmedic-stream``, ``kmedic-manager``: one per role, each allowed exactly
  what ``kmedic.kafka_acls`` grants it and nothing else (the brokers run Kafka's
  ``StandardAuthorizer``, denying whatever no ACL allows).

Passwords are random hex (nothing to quote in a JAAS line or in the storage tool's
``--add-scram`` argument), one per file, so every config names a ``password_file`` and no
password is ever written into a kmedic config. The brokers' own ``server.properties`` holds the
inter-broker password, as a broker's JAAS settings always do; it is owner-readable only.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kmedic.errors import KmedicError
from kmedic.kafka_acls import GRANTS, ROLES, Role
from kmedic.kafka_client import KafkaClientSettings
from kmedic.localcluster.configs import (
    INTER_BROKER_MECHANISM,
    SCRAM_MECHANISMS,
    SecureListener,
)
from kmedic.localcluster.tls import LocalCa

ADMIN = "admin"
USERS = (ADMIN, *(f"kmedic-{role}" for role in ROLES))


def role_user(role: Role) -> str:
    return f"kmedic-{role}"


@dataclass(frozen=True)
class ClusterSecurity:
    directory: Path

    @classmethod
    def create(cls, directory: Path) -> ClusterSecurity:
        """A new CA, the brokers' certificate (valid for 127.0.0.1 and localhost) and a
        password per user, written under ``directory``."""
        security = cls(directory)
        ca = LocalCa.create(directory)
        pair = ca.issue(directory, "broker", server=True)
        # Kafka's PEM key store is one file: the private key, then the certificate chain.
        _write(security.keystore, pair.key.read_bytes() + pair.cert.read_bytes())
        for user in USERS:
            _write(security.password_file(user), (secrets.token_hex(16) + "\n").encode())
        return security

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ClusterSecurity:
        return cls(Path(state["directory"]))

    def to_state(self) -> dict[str, Any]:
        return {"directory": str(self.directory)}

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.directory / "broker-keystore.pem"

    def password_file(self, user: str) -> Path:
        return self.directory / f"{user}.password"

    def password(self, user: str) -> str:
        try:
            return self.password_file(user).read_text().strip()
        except OSError as exc:
            raise KmedicError(
                f"the secured cluster's password of {user} is missing: {exc.strerror}"
            ) from exc

    def listener(self) -> SecureListener:
        return SecureListener(
            keystore=str(self.keystore),
            truststore=str(self.ca_file),
            inter_broker_user=ADMIN,
            inter_broker_password=self.password(ADMIN),
        )

    def scram_arguments(self) -> list[str]:
        """The storage tool's ``--add-scram`` arguments: every user, both mechanisms."""
        args = []
        for user in USERS:
            for mechanism in SCRAM_MECHANISMS:
                args += ["--add-scram", f"{mechanism}=[name={user},password={self.password(user)}]"]
        return args

    def client(self, bootstrap: str, user: str) -> KafkaClientSettings:
        """The ``kafka:`` section of a client that connects as ``user``."""
        return KafkaClientSettings(
            bootstrap=bootstrap,
            security_protocol="SASL_SSL",
            sasl_mechanism=INTER_BROKER_MECHANISM,
            username=user,
            password_file=self.password_file(user),
            ssl_ca_file=self.ca_file,
        )


def grant_role_acls(admin_conf: dict[str, Any], timeout_s: float = 30.0) -> int:
    """Create every ACL ``kmedic.kafka_acls`` grants, for each role's user; the count."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    kinds = {
        "cluster": ResourceType.BROKER,
        "topic": ResourceType.TOPIC,
        "group": ResourceType.GROUP,
    }
    bindings = [
        AclBinding(
            kinds[grant.resource],
            grant.name,
            ResourcePatternType.PREFIXED if grant.prefixed else ResourcePatternType.LITERAL,
            f"User:{role_user(role)}",
            "*",
            AclOperation[_SNAKE.sub("_", operation).upper()],
            AclPermissionType.ALLOW,
        )
        for role in ROLES
        for grant in GRANTS[role]
        for operation in grant.operations
    ]
    admin = AdminClient(admin_conf)
    for future in admin.create_acls(bindings, request_timeout=timeout_s).values():
        try:
            future.result(timeout=timeout_s)
        except Exception as exc:  # KafkaException, or the future's own timeout
            raise KmedicError(f"creating the roles' ACLs failed: {exc}") from exc
    return len(bindings)


# "DescribeConfigs" -> "Describe_Configs": Kafka's operation names in AclOperation's spelling.
_SNAKE = re.compile(r"(?<=[a-z])(?=[A-Z])")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
