"""Rendering of the local cluster's node configs (pure)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kmedic.errors import ConfigError
from kmedic.localcluster import configs
from kmedic.localcluster.configs import ClusterSpec


def parse(props: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in props.splitlines() if line)


def test_racks_round_robin_and_explicit_map() -> None:
    spec = ClusterSpec(brokers=5, racks=("/a", "/b"), rack_map={5: "/c"})
    assert [spec.rack_of(b) for b in spec.broker_ids] == ["/a", "/b", "/a", "/b", "/c"]


@pytest.mark.parametrize(
    "kwargs",
    [{"brokers": 0}, {"racks": ()}, {"brokers": 2, "rack_map": {3: "/x"}}, {"kafka_jars": "4.4"}],
)
def test_bad_spec_is_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ClusterSpec(**kwargs)  # type: ignore[arg-type]


def test_the_newest_kafka_is_the_default_and_cluster_up_names_each_release() -> None:
    assert ClusterSpec().kafka_jars == configs.KAFKA_NEWEST == "kafka"
    assert configs.KAFKA_RELEASES == {"4.4": "kafka", "4.1": "kafka-4.1"}
    assert set(configs.KAFKA_RELEASES.values()) == set(configs.KAFKA_LINES)


def test_broker_properties_carry_rack_listener_and_capped_replication() -> None:
    props = parse(
        configs.broker_properties(
            3, port=9093, controller_port=9000, rack="/r2", data_dir="/d", broker_count=2
        )
    )
    assert props["node.id"] == "3"
    assert props["broker.rack"] == "/r2"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9093"
    assert props["controller.quorum.voters"] == f"{configs.CONTROLLER_ID}@127.0.0.1:9000"
    assert props["offsets.topic.replication.factor"] == "2"  # never more than the brokers


def broker_props(**kwargs: Any) -> dict[str, str]:
    """Broker 1's properties in a three-broker cluster, ``kwargs`` to broker_properties."""
    return parse(
        configs.broker_properties(
            1, port=9092, controller_port=9000, rack="/r1", data_dir="/d", broker_count=3, **kwargs
        )
    )


def test_only_a_shaped_clusters_brokers_measure_throttles_over_one_second() -> None:
    def window(**kwargs: bool) -> str | None:
        return broker_props(**kwargs).get("replication.quota.window.num")

    assert window(shaped=True) == "1"  # the copy paced within each second
    assert window() is None  # Kafka's 11: the tests' stalled copies need a long window


def test_brokers_at_kafkas_defaults_carry_none_of_the_local_tunings() -> None:
    """ClusterSpec.kafka_defaults (the benches' "as shipped", issue 73): neither the tests'
    quick heartbeats, ISR lag and segments nor a shaped link's replication settings; the
    overrides a bench names still apply."""

    tuned = {**configs.BROKER_TUNINGS, **configs.SHAPED_REPLICATION}
    assert set(tuned) <= set(broker_props(shaped=True))
    plain = broker_props(
        shaped=True, kafka_defaults=True, overrides={"replica.fetch.max.bytes": "4096"}
    )
    assert not set(tuned) & set(plain), plain
    assert plain["replica.fetch.max.bytes"] == "4096"
    assert configs.ClusterSpec(kafka_defaults=True).kafka_defaults
    controller = parse(configs.controller_properties(9000, "/d", kafka_defaults=True))
    assert "broker.session.timeout.ms" not in controller  # Kafka's 9 s
    assert parse(configs.controller_properties(9000, "/d"))["broker.session.timeout.ms"] == "6000"


def test_controller_properties_are_controller_only() -> None:
    props = parse(configs.controller_properties(9000, "/d"))
    assert props["process.roles"] == "controller"
    assert "advertised.listeners" not in props


def test_cluster_id_is_a_16_byte_urlsafe_uuid_never_read_as_an_option() -> None:
    for _ in range(2000):  # about 1 in 64 raw ids starts with '-'
        cid = configs.new_cluster_id()
        assert len(cid) == 22
        assert not cid.startswith("-")
        assert len(base64.urlsafe_b64decode(cid + "==")) == 16


def test_the_controller_fences_and_overrides_win() -> None:
    props = parse(configs.controller_properties(9000, "/d", {"broker.session.timeout.ms": "30000"}))
    assert props["broker.session.timeout.ms"] == "30000"
    assert "broker.session.timeout.ms" in parse(configs.controller_properties(9000, "/d"))
    broker = parse(
        configs.broker_properties(
            1,
            port=1,
            controller_port=2,
            rack="/r",
            data_dir="/d",
            broker_count=4,
            overrides={"num.partitions": "8"},
        )
    )
    assert broker["num.partitions"] == "8"


def test_a_secured_broker_has_only_a_sasl_ssl_listener_for_clients_and_brokers() -> None:
    secure = configs.SecureListener(
        keystore="/s/broker-keystore.pem",
        truststore="/s/ca.pem",
        inter_broker_user="admin",
        inter_broker_password="0123abcd",
    )
    props = parse(
        configs.broker_properties(
            2,
            port=9094,
            controller_port=9000,
            rack="/r1",
            data_dir="/d",
            broker_count=3,
            secure=secure,
        )
    )
    assert props["listeners"] == "SASL_SSL://127.0.0.1:9094"
    assert props["advertised.listeners"] == "SASL_SSL://127.0.0.1:9094"
    assert props["inter.broker.listener.name"] == "SASL_SSL"
    # No PLAINTEXT listener left in the map: nothing a client could fall back to.
    assert props["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL"
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-256,SCRAM-SHA-512"
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    jaas = props["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"]
    assert 'username="admin"' in jaas and 'password="0123abcd"' in jaas
    assert props["ssl.keystore.type"] == props["ssl.truststore.type"] == "PEM"
    assert props["ssl.keystore.location"] == "/s/broker-keystore.pem"
    assert props["ssl.truststore.location"] == "/s/ca.pem"
