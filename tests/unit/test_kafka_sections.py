"""Every role takes the shared `kafka:` section, or the bootstrap shorthand, never both; and
each client library gets its settings from the section, the shorthand meaning plaintext."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agent.config import AgentConfig
from agent.publisher import producer_settings
from kmedic.errors import KmedicError
from kmedic.kafka_client import KafkaClientSettings, confluent_conf
from manager.config import ManagerConfig
from streaming.config import StreamConfig
from streaming.job import kafka_options

SECURE = {
    "bootstrap": "b:9093",
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "SCRAM-SHA-256",
    "username": "kmedic",
    "password": "section-secret",
    "password_in_config": True,
}
AGENT = {"broker_id": 1, "exporter_url": "http://b:7071/metrics"}
MANAGER = {"cluster": "c1", "zookeeper": {"zk_connect": "z:2181"}}


def test_the_agent_takes_the_section_or_the_shorthand() -> None:
    secured = AgentConfig.model_validate({**AGENT, "kafka": SECURE})
    assert producer_settings(secured)["sasl.username"] == "kmedic"
    assert producer_settings(secured)["client.id"] == "kmedic-agent-1"
    plain = AgentConfig.model_validate({**AGENT, "bootstrap": "b:9092"})
    assert producer_settings(plain)["bootstrap.servers"] == "b:9092"
    assert producer_settings(plain)["security.protocol"] == "PLAINTEXT"
    elsewhere = AgentConfig.model_validate(
        {**AGENT, "kafka": SECURE, "publish_kafka": {**SECURE, "bootstrap": "other:9093"}}
    )
    assert producer_settings(elsewhere)["bootstrap.servers"] == "other:9093"


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({}, "give exactly one of bootstrap and kafka"),
        ({"bootstrap": "b:9092", "kafka": SECURE}, "give exactly one of bootstrap and kafka"),
        (
            {"bootstrap": "b", "publish_bootstrap": "p", "publish_kafka": SECURE},
            "at most one of publish_bootstrap and publish_kafka",
        ),
    ],
)
def test_the_agent_refuses_two_ways_or_none(extra: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        AgentConfig.model_validate({**AGENT, **extra})


def test_the_manager_takes_the_section_or_the_shorthand() -> None:
    cfg = ManagerConfig.model_validate(
        {**MANAGER, "kafka": SECURE, "audit": {"secondary_kafka": {**SECURE, "bootstrap": "s:1"}}}
    )
    assert isinstance(cfg.cluster_client, KafkaClientSettings)
    assert confluent_conf(cfg.cluster_client)["sasl.mechanism"] == "SCRAM-SHA-256"
    secondary = cfg.secondary_client
    assert isinstance(secondary, KafkaClientSettings) and secondary.bootstrap == "s:1"
    assert ManagerConfig.model_validate({**MANAGER, "bootstrap": "b:9092"}).cluster_client == (
        "b:9092"
    )
    with pytest.raises(ValidationError, match="give exactly one of bootstrap and kafka"):
        ManagerConfig.model_validate({**MANAGER, "bootstrap": "b:9092", "kafka": SECURE})


def test_the_stream_takes_the_section_and_keeps_tuning_apart() -> None:
    cfg = StreamConfig.model_validate(
        {"kafka": SECURE, "kafka_options": {"request.timeout.ms": "4000"}}
    )
    options = kafka_options(cfg)
    assert options["kafka.bootstrap.servers"] == "b:9093"
    assert options["kafka.security.protocol"] == "SASL_PLAINTEXT"
    assert 'password="section-secret"' in options["kafka.sasl.jaas.config"]
    assert options["kafka.request.timeout.ms"] == "4000"
    for shorthand in ("bootstrap", "bootstrap_servers"):  # the key, and its former name
        with pytest.raises(ValidationError, match="give exactly one of bootstrap and kafka"):
            StreamConfig.model_validate({"kafka": SECURE, shorthand: "b:9092"})
    bad = StreamConfig.model_validate(
        {"kafka": SECURE, "kafka_options": {"security.protocol": "PLAINTEXT"}}
    )
    with pytest.raises(KmedicError, match=r"kafka_options may not set kafka\.security\.protocol"):
        kafka_options(bad)


def test_the_stream_shorthand_is_plaintext() -> None:
    options = kafka_options(StreamConfig(bootstrap="b:9092"))
    assert options == {
        "kafka.bootstrap.servers": "b:9092",
        "kafka.security.protocol": "PLAINTEXT",
    }


def test_a_client_cannot_override_how_it_connects() -> None:
    with pytest.raises(ValueError, match=r"may not override security\.protocol"):
        confluent_conf("b:9092", {"security.protocol": "SSL"})
