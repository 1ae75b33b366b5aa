"""The one `kafka:` client section every role and command shares, translated in one place into
the settings of each client library kmedic uses: confluent-kafka (librdkafka), kafka-python and
Spark's Kafka source and sink (the Java client, as ``kafka.*`` options).

Secrets (the SASL password, the client key's password) are ``SecretStr``: they print as
``**********`` in every repr, log line and validation error. They come from a file
(``password_file``, read when the settings are translated, so a rotated file is picked up at the
next client) or from the environment through the config loader's overrides
(``KMEDIC_<ROLE>__KAFKA__PASSWORD``). A password written in clear in the config file is
accepted only with ``password_in_config: true``, the operator's explicit choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from kmedic import secrets
from kmedic.errors import ConfigError

Protocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
Mechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


class KafkaClientSettings(BaseModel):
    """How every kmedic client reaches the cluster: where, and as whom."""

    # Validation errors never echo their input: it may hold a password.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    bootstrap: str = Field(min_length=1, description="bootstrap servers, host:port[,host:port]")
    security_protocol: Protocol = "PLAINTEXT"
    sasl_mechanism: Mechanism | None = Field(
        default=None, description="required with SASL_PLAINTEXT and SASL_SSL"
    )
    username: str | None = None
    password: SecretStr | None = Field(
        default=None, description="prefer password_file or KMEDIC_<ROLE>__KAFKA__PASSWORD"
    )
    password_file: Path | None = Field(
        default=None, description="a file holding the SASL password (one line)"
    )
    password_in_config: bool = Field(
        default=False, description="accept a password written in clear in the config file"
    )
    ssl_ca_file: Path | None = Field(
        default=None, description="PEM file of the CA(s) to trust; default: the system's"
    )
    ssl_cert_file: Path | None = Field(default=None, description="client certificate (PEM)")
    ssl_key_file: Path | None = Field(default=None, description="client private key (PEM)")
    ssl_key_password: SecretStr | None = Field(
        default=None, description="password of an encrypted client key"
    )
    ssl_check_hostname: bool = Field(
        default=True, description="verify the broker's certificate names its host"
    )

    @model_validator(mode="after")
    def _consistent(self) -> KafkaClientSettings:
        problems = []
        if self.sasl:
            if self.sasl_mechanism is None:
                problems.append(f"sasl_mechanism is required with {self.security_protocol}")
            if not self.username:
                problems.append(f"username is required with {self.security_protocol}")
            if (self.password is None) == (self.password_file is None):
                problems.append(
                    f"exactly one of password and password_file is required with "
                    f"{self.security_protocol}"
                )
        elif self.sasl_mechanism or self.username or self.password or self.password_file:
            problems.append(
                f"sasl_mechanism, username and password need security_protocol SASL_PLAINTEXT "
                f"or SASL_SSL, not {self.security_protocol}"
            )
        tls_files = (self.ssl_ca_file, self.ssl_cert_file, self.ssl_key_file)
        if not self.tls and any(tls_files):
            problems.append(
                f"ssl_* files need security_protocol SSL or SASL_SSL, not {self.security_protocol}"
            )
        if (self.ssl_cert_file is None) != (self.ssl_key_file is None):
            problems.append("ssl_cert_file and ssl_key_file go together")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    def resolved_password(self) -> str:
        """The SASL password, read from ``password_file`` when one is given."""
        return secrets.resolve(self.password, self.password_file, "kafka.password_file")

    def _key_password(self) -> str:
        assert self.ssl_key_password is not None
        secrets.register(self.ssl_key_password.get_secret_value())
        return self.ssl_key_password.get_secret_value()

    def _check_files(self) -> None:
        for name in ("ssl_ca_file", "ssl_cert_file", "ssl_key_file"):
            path: Path | None = getattr(self, name)
            if path is not None and not path.is_file():
                raise ConfigError(f"kafka.{name}: {path} is not a readable file")

    def confluent(self) -> dict[str, str]:
        """librdkafka settings (confluent-kafka's Producer, Consumer and AdminClient)."""
        self._check_files()
        conf = {"bootstrap.servers": self.bootstrap, "security.protocol": self.security_protocol}
        if self.sasl:
            conf["sasl.mechanism"] = str(self.sasl_mechanism)
            conf["sasl.username"] = str(self.username)
            conf["sasl.password"] = self.resolved_password()
        if self.tls:
            conf["ssl.endpoint.identification.algorithm"] = (
                "https" if self.ssl_check_hostname else "none"
            )
            if self.ssl_ca_file is not None:
                conf["ssl.ca.location"] = str(self.ssl_ca_file)
            if self.ssl_cert_file is not None and self.ssl_key_file is not None:
                conf["ssl.certificate.location"] = str(self.ssl_cert_file)
                conf["ssl.key.location"] = str(self.ssl_key_file)
            if self.ssl_key_password is not None:
                conf["ssl.key.password"] = self._key_password()
        return conf

    def kafka_python(self) -> dict[str, object]:
        """kafka-python keyword arguments (its KafkaAdminClient, for what librdkafka lacks)."""
        self._check_files()
        kwargs: dict[str, object] = {
            "bootstrap_servers": self.bootstrap,
            "security_protocol": self.security_protocol,
        }
        if self.sasl:
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            kwargs["sasl_plain_username"] = self.username
            kwargs["sasl_plain_password"] = self.resolved_password()
        if self.tls:
            kwargs["ssl_check_hostname"] = self.ssl_check_hostname
            if self.ssl_ca_file is not None:
                kwargs["ssl_cafile"] = str(self.ssl_ca_file)
            if self.ssl_cert_file is not None and self.ssl_key_file is not None:
                kwargs["ssl_certfile"] = str(self.ssl_cert_file)
                kwargs["ssl_keyfile"] = str(self.ssl_key_file)
            if self.ssl_key_password is not None:
                kwargs["ssl_password"] = self._key_password()
        return kwargs

    def spark(self) -> dict[str, str]:
        """Spark's Kafka source and sink options (the Java client's settings, ``kafka.``-
        prefixed). PEM files are read by the Java client itself (``ssl.*.type=PEM``)."""
        self._check_files()
        opts = {
            "kafka.bootstrap.servers": self.bootstrap,
            "kafka.security.protocol": self.security_protocol,
        }
        if self.sasl:
            opts["kafka.sasl.mechanism"] = str(self.sasl_mechanism)
            opts["kafka.sasl.jaas.config"] = (
                f"{_JAAS_MODULES[str(self.sasl_mechanism)]} required "
                f"username={_jaas_quote(str(self.username))} "
                f"password={_jaas_quote(self.resolved_password())};"
            )
        if self.tls:
            opts["kafka.ssl.endpoint.identification.algorithm"] = (
                "https" if self.ssl_check_hostname else ""
            )
            if self.ssl_ca_file is not None:
                opts["kafka.ssl.truststore.type"] = "PEM"
                opts["kafka.ssl.truststore.location"] = str(self.ssl_ca_file)
            if self.ssl_cert_file is not None and self.ssl_key_file is not None:
                opts["kafka.ssl.keystore.type"] = "PEM"
                opts["kafka.ssl.keystore.certificate.chain"] = _read_pem(self.ssl_cert_file)
                opts["kafka.ssl.keystore.key"] = _read_pem(self.ssl_key_file)
            if self.ssl_key_password is not None:
                opts["kafka.ssl.key.password"] = self._key_password()
        return opts

    def secrets(self) -> list[str]:
        """Every secret value these settings hold, for redaction and for tests that grep."""
        found = []
        if self.sasl and (self.password is not None or self.password_file is not None):
            found.append(self.resolved_password())
        if self.ssl_key_password is not None:
            found.append(self._key_password())
        return [s for s in found if s]


def _jaas_quote(value: str) -> str:
    """A JAAS option value in double quotes, with the two characters JAAS escapes escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _read_pem(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"kafka: cannot read PEM file {path}: {exc}") from exc


Cluster = str | KafkaClientSettings
"""Where a client connects: a full ``kafka:`` section, or a bare bootstrap string (plaintext:
the local cluster, tests, and configs written before the section existed)."""


def one_cluster(bootstrap: str | None, kafka: KafkaClientSettings | None, where: str) -> Cluster:
    """A role's cluster from its config: the ``kafka:`` section, or the ``bootstrap``
    shorthand (plaintext); exactly one of them."""
    if (bootstrap is None) == (kafka is None):
        raise ValueError(f"give exactly one of {where}bootstrap and {where}kafka")
    return kafka if kafka is not None else str(bootstrap)


def client_settings(cluster: Cluster) -> KafkaClientSettings:
    if isinstance(cluster, KafkaClientSettings):
        return cluster
    return KafkaClientSettings(bootstrap=cluster)


def confluent_conf(cluster: Cluster, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """librdkafka settings for ``cluster``, with a client's own settings on top (they may not
    override how it connects and authenticates)."""
    base = client_settings(cluster).confluent()
    extra = extra or {}
    clash = sorted(set(base) & set(extra))
    if clash:
        raise ValueError(f"client settings may not override {', '.join(clash)}")
    return {**base, **extra}


def error_text(exc: BaseException) -> str:
    """A client error as a reader wants it: librdkafka's sentence and code name
    ("Failed to get metadata: Local: Broker transport failure (_TRANSPORT)"), not the
    KafkaError{code=...,val=...} its exception prints."""
    error: Any = exc.args[0] if exc.args else None
    if hasattr(error, "str") and hasattr(error, "name"):
        return f"{error.str()} ({error.name()})"
    return str(exc)
