"""The shared `kafka:` client section: validation, the three translations, and secrets that
never show."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kmedic.config import describe_validation_error, load_config
from kmedic.errors import ConfigError
from kmedic.kafka_client import KafkaClientSettings
from manager.config import ManagerConfig, load_manager_config

SECRET = "s3cr3t-Pa55"


@pytest.fixture
def pems(tmp_path: Path) -> dict[str, Path]:
    files = {}
    for name in ("ca", "cert", "key"):
        path = tmp_path / f"{name}.pem"
        path.write_text(f"-----BEGIN {name.upper()}-----\nAAAA\n-----END {name.upper()}-----\n")
        files[name] = path
    return files


def sasl_ssl(pems: dict[str, Path], **extra: object) -> KafkaClientSettings:
    return KafkaClientSettings.model_validate(
        {
            "bootstrap": "b1:9093,b2:9093",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "username": "kmedic-manager",
            "password": SECRET,
            "ssl_ca_file": str(pems["ca"]),
            **extra,
        }
    )


def test_plaintext_is_the_default_and_adds_nothing() -> None:
    s = KafkaClientSettings(bootstrap="b:9092")
    assert s.confluent() == {"bootstrap.servers": "b:9092", "security.protocol": "PLAINTEXT"}
    assert s.kafka_python() == {"bootstrap_servers": "b:9092", "security_protocol": "PLAINTEXT"}
    assert s.spark() == {
        "kafka.bootstrap.servers": "b:9092",
        "kafka.security.protocol": "PLAINTEXT",
    }
    assert s.secrets() == []


def test_sasl_ssl_translates_to_each_library(pems: dict[str, Path]) -> None:
    s = sasl_ssl(pems)
    assert s.confluent() == {
        "bootstrap.servers": "b1:9093,b2:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "kmedic-manager",
        "sasl.password": SECRET,
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.ca.location": str(pems["ca"]),
    }
    assert s.kafka_python() == {
        "bootstrap_servers": "b1:9093,b2:9093",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "kmedic-manager",
        "sasl_plain_password": SECRET,
        "ssl_check_hostname": True,
        "ssl_cafile": str(pems["ca"]),
    }
    spark = s.spark()
    assert spark["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert spark["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="kmedic-manager" password="{SECRET}";'
    )
    assert spark["kafka.ssl.truststore.type"] == "PEM"
    assert spark["kafka.ssl.truststore.location"] == str(pems["ca"])
    assert spark["kafka.ssl.endpoint.identification.algorithm"] == "https"


def test_mutual_tls_and_no_hostname_check(pems: dict[str, Path]) -> None:
    s = KafkaClientSettings.model_validate(
        {
            "bootstrap": "b:9093",
            "security_protocol": "SSL",
            "ssl_ca_file": str(pems["ca"]),
            "ssl_cert_file": str(pems["cert"]),
            "ssl_key_file": str(pems["key"]),
            "ssl_key_password": "keypass",
            "ssl_check_hostname": False,
        }
    )
    conf = s.confluent()
    assert conf["ssl.certificate.location"] == str(pems["cert"])
    assert conf["ssl.key.location"] == str(pems["key"])
    assert conf["ssl.key.password"] == "keypass"
    assert conf["ssl.endpoint.identification.algorithm"] == "none"
    assert "sasl.mechanism" not in conf
    kp = s.kafka_python()
    assert (kp["ssl_certfile"], kp["ssl_keyfile"], kp["ssl_password"]) == (
        str(pems["cert"]),
        str(pems["key"]),
        "keypass",
    )
    assert kp["ssl_check_hostname"] is False
    spark = s.spark()
    assert spark["kafka.ssl.keystore.type"] == "PEM"
    assert spark["kafka.ssl.keystore.certificate.chain"] == pems["cert"].read_text()
    assert spark["kafka.ssl.keystore.key"] == pems["key"].read_text()
    assert spark["kafka.ssl.endpoint.identification.algorithm"] == ""
    assert s.secrets() == ["keypass"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_each_mechanism_has_its_login_module(pems: dict[str, Path], mechanism: str) -> None:
    jaas = sasl_ssl(pems, sasl_mechanism=mechanism).spark()["kafka.sasl.jaas.config"]
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    assert jaas.startswith(f"org.apache.kafka.common.security.{module} required ")


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({"security_protocol": "SASL_SSL", "username": "u", "password": "p"}, "sasl_mechanism"),
        (
            {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN", "password": "p"},
            "username is required",
        ),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "username": "u"},
            "exactly one of password and password_file",
        ),
        (
            {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "PLAIN",
                "username": "u",
                "password": "p",
                "password_file": "/x",
            },
            "exactly one of password and password_file",
        ),
        ({"username": "u"}, "need security_protocol SASL_PLAINTEXT or SASL_SSL, not PLAINTEXT"),
        ({"ssl_ca_file": "/ca.pem"}, "ssl_* files need security_protocol SSL or SASL_SSL"),
        (
            {"security_protocol": "SSL", "ssl_cert_file": "/c.pem"},
            "ssl_cert_file and ssl_key_file go together",
        ),
        ({"security_protocol": "TLS"}, "security_protocol"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "sasl_mechanism"),
        ({"sasl_password": "p"}, "sasl_password"),
    ],
)
def test_inconsistent_settings_are_refused_naming_the_problem(
    settings: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        KafkaClientSettings.model_validate({"bootstrap": "b:9092", **settings})
    assert problem in str(caught.value)


def test_password_file_is_read_at_translation(tmp_path: Path, pems: dict[str, Path]) -> None:
    secret = tmp_path / "password"
    secret.write_text("from-a-file\n")
    s = sasl_ssl(pems, password=None, password_file=str(secret))
    assert s.confluent()["sasl.password"] == "from-a-file"
    secret.write_text("rotated\n")
    assert s.kafka_python()["sasl_plain_password"] == "rotated"
    assert s.secrets() == ["rotated"]


@pytest.mark.parametrize("content", [None, ""])
def test_a_missing_or_empty_password_file_is_named(
    tmp_path: Path, pems: dict[str, Path], content: str | None
) -> None:
    secret = tmp_path / "password"
    if content is not None:
        secret.write_text(content)
    s = sasl_ssl(pems, password=None, password_file=str(secret))
    with pytest.raises(ConfigError, match=re.escape(f"kafka.password_file: {secret}")):
        s.confluent()


def test_a_missing_tls_file_is_named(pems: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    s = sasl_ssl(pems, ssl_ca_file=str(missing))
    for translate in (s.confluent, s.kafka_python, s.spark):
        with pytest.raises(ConfigError, match=re.escape(f"kafka.ssl_ca_file: {missing}")):
            translate()


def test_a_password_in_a_config_file_needs_the_operators_word(tmp_path: Path) -> None:
    section = {
        "bootstrap": "b:9093",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "username": "u",
        "password": SECRET,
    }
    path = tmp_path / "manager.yaml"
    doc = {"cluster": "c1", "zookeeper": {"zk_connect": "z:2181"}, "kafka": section}
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as caught:
        load_manager_config(path)
    assert f"{path}: kafka.password: a password in clear" in str(caught.value)
    assert SECRET not in str(caught.value)
    path.write_text(yaml.safe_dump({**doc, "kafka": {**section, "password_in_config": True}}))
    assert load_manager_config(path).kafka is not None
    # From the environment it is not in the file: accepted.
    path.write_text(yaml.safe_dump({**doc, "kafka": {**section, "password": None}}))
    cfg = load_config(
        ManagerConfig,
        path,
        env_prefix="KMEDIC_MANAGER",
        env={"KMEDIC_MANAGER__KAFKA__PASSWORD": SECRET},
    )
    assert cfg.kafka is not None and cfg.kafka.resolved_password() == SECRET


# Marked so that no other text in a repr or an error can contain it by chance.
PASSWORDS = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), min_size=1).map(
    lambda p: f"\u00a7{p}\u00a7"
)


@given(password=PASSWORDS)
def test_a_secret_never_shows_in_repr_or_errors(password: str) -> None:
    good = KafkaClientSettings.model_validate(
        {
            "bootstrap": "b:9092",
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "PLAIN",
            "username": "u",
            "password": password,
            "ssl_key_password": password,
        }
    )
    assert password not in f"{good!r} {good} {good.model_dump()} {good.model_dump_json()}"
    for bad in (
        {"security_protocol": "SASL_SSL", "password": password},  # incomplete
        {"password": password},  # a password without SASL
        {"security_protocol": "SSL", "ssl_key_password": password, "ssl_check_hostname": "x"},
    ):
        with pytest.raises(ValidationError) as caught:
            KafkaClientSettings.model_validate({"bootstrap": "b:9092", **bad})
        assert password not in str(caught.value)
        # What a user sees: the loader's message, file and field path and what is wrong.
        assert password not in describe_validation_error(
            caught.value, "x.yaml", KafkaClientSettings
        )


@given(password=PASSWORDS)
def test_the_jaas_password_reads_back(password: str) -> None:
    s = KafkaClientSettings(
        bootstrap="b:9092",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        username="u",
        password=password,  # type: ignore[arg-type]
    )
    jaas = s.spark()["kafka.sasl.jaas.config"]
    quoted = re.fullmatch(r'.* password="((?:[^"\\]|\\.)*)";', jaas)
    assert quoted is not None
    assert re.sub(r"\\(.)", r"\1", quoted.group(1)) == password
