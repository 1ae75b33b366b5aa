"""End to end on a cluster that accepts only SASL_SSL (``kmedic cluster up --secure``): who is
refused, how a misconfigured role stops, and a heal by agents, the Spark job and the manager
that all connect through the same ``kafka:`` section — with no password in anything they write.

The tests run in order: refusals first (nothing running), then the heal, then the grep of
everything the pipeline wrote.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from e2e_support import audit_records, partitions
from helpers import kafka_conf, wait_for, wait_until_usable

from composition.pipeline import Pipeline
from kmedic.errors import KmedicError
from kmedic.kafka_client import KafkaClientSettings
from kmedic.kafka_preflight import check_credentials
from kmedic.localcluster import ClusterSpec, LocalCluster, process
from kmedic.localcluster.security import USERS, role_user
from kmedic.localcluster.tls import LocalCa
from kmedic.traffic import PartitionRate, TrafficGenerator
from manager.audit.log import AuditRecord
from manager.monitor.feeds import LatestByKey

pytestmark = pytest.mark.e2e

TOPIC = "secure.rf2"
PARTITIONS = 4
VICTIM = 4
WRONG_PASSWORD = "not-the-password-" + uuid.uuid4().hex[:8]


@pytest.fixture(scope="module")
def secure_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    spec = ClusterSpec(brokers=4, racks=("/r1", "/r2"), secure=True)
    cluster = LocalCluster.start(spec, tmp_path_factory.mktemp("secure-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def pipeline(
    secure_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pipeline]:
    """Made, not started: the refusal tests only write configs with it."""
    pipeline = Pipeline(secure_cluster, tmp_path_factory.mktemp("secure-pipeline"), "secure")
    try:
        yield pipeline
    finally:
        pipeline.stop()


@pytest.fixture(scope="module")
def role_outputs() -> list[str]:
    """What the refusal tests' roles printed: grepped for secrets at the end."""
    return []


MANAGER = role_user("manager")


def kmedic_settings(cluster: LocalCluster, **changes: Any) -> KafkaClientSettings:
    settings = cluster.client_as(MANAGER)
    assert isinstance(settings, KafkaClientSettings)
    return settings.model_copy(update=changes)


def test_clients_without_the_right_credentials_are_refused(secure_cluster: LocalCluster) -> None:
    bootstrap = secure_cluster.bootstrap_servers
    security = secure_cluster.security
    assert security is not None
    refused = [
        {"bootstrap.servers": bootstrap},  # plaintext: no TLS, no identity
        {  # TLS, but no identity
            "bootstrap.servers": bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(security.ca_file),
        },
        {  # the right user with a wrong password
            **kafka_conf(secure_cluster.client_as(MANAGER)),
            "sasl.password": WRONG_PASSWORD,
        },
    ]
    for conf in refused:
        with pytest.raises(KafkaException):
            AdminClient({**conf, "log_level": 0}).list_topics(timeout=4)
    # The same request with the manager's own settings is answered.
    meta = AdminClient(kafka_conf(secure_cluster.client_as(MANAGER))).list_topics(timeout=15)
    assert {int(b) for b in meta.brokers} == set(secure_cluster.broker_ids)


def test_the_start_check_names_a_wrong_password_and_an_untrusted_ca(
    secure_cluster: LocalCluster, tmp_path: Path
) -> None:
    bad_file = tmp_path / "wrong.password"
    bad_file.write_text(WRONG_PASSWORD + "\n")
    with pytest.raises(KmedicError, match=r"refused user kmedic-manager .*kafka\.password_file"):
        check_credentials(kmedic_settings(secure_cluster, password_file=bad_file), role="test")
    other_ca = LocalCa.create(tmp_path / "other-ca")
    with pytest.raises(KmedicError, match=r"certificate verify failed.*kafka\.ssl_ca_file"):
        check_credentials(kmedic_settings(secure_cluster, ssl_ca_file=other_ca.cert), role="test")
    check_credentials(secure_cluster.client_as(MANAGER), role="test")  # the right ones pass


@pytest.mark.parametrize("problem", ["wrong password", "untrusted CA"])
@pytest.mark.parametrize("role", ["agent", "stream", "manager"])
def test_a_misconfigured_role_stops_at_start_with_one_line(
    role: str,
    problem: str,
    secure_cluster: LocalCluster,
    pipeline: Pipeline,
    role_outputs: list[str],
    tmp_path: Path,
) -> None:
    kafka = secure_cluster.kafka_section(role_user(role))  # type: ignore[arg-type]
    if problem == "wrong password":
        bad = tmp_path / "wrong.password"
        bad.write_text(WRONG_PASSWORD + "\n")
        kafka["password_file"] = str(bad)
        expected = "kafka.password_file"
    else:
        kafka["ssl_ca_file"] = str(LocalCa.create(tmp_path / "other-ca").cert)
        expected = "kafka.ssl_ca_file"
    configs = {
        "agent": lambda: pipeline.agent_config(1, 2.0),
        "stream": pipeline.stream_config,
        "manager": pipeline.manager_config,
    }
    config = {**configs[role](), "kafka": kafka}
    path = tmp_path / f"{role}.yaml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [sys.executable, "-m", "composition.cli", "--log-json", role, "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    role_outputs.append(done.stdout + done.stderr)
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("kmedic: error:")]
    assert len(errors) == 1, done.stderr
    assert f"{role}: Kafka at {secure_cluster.bootstrap_servers} (SASL_SSL) refused" in errors[0]
    assert expected in errors[0]
    assert "Traceback" not in done.stderr


@pytest.fixture(scope="module")
def healing(secure_cluster: LocalCluster, pipeline: Pipeline) -> Iterator[dict[str, Any]]:
    """The pipeline running on the secured cluster with loads for every test partition."""
    cluster = secure_cluster
    client = cluster.client  # the operator (admin) makes the test's topic and traffic
    admin = AdminClient(kafka_conf(client))
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 2)])[TOPIC].result(timeout=30)
    wait_until_usable(client, [TOPIC])
    http_port = process.free_ports(1)[0]
    rates = [PartitionRate(TOPIC, p, 20_000) for p in range(PARTITIONS)]
    traffic = TrafficGenerator(client, rates).start()
    loads: LatestByKey[bytes] = LatestByKey(client, "kmedic.replica-loads", lambda raw: raw)
    loads.start()
    try:
        pipeline.start_agents(interval_s=2)
        pipeline.start_stream()
        pipeline.start_manager(
            interval_s=3,
            policy={"dead_grace_ms": 10_000, "max_dead_brokers": 1, "even_spread": False},
            http={"port": http_port},
        )
        wanted = {f"{TOPIC}:{p}".encode() for p in range(PARTITIONS)}

        def loads_ready() -> bool:
            pipeline.check_running()
            return wanted <= set(loads.values())

        wait_for(loads_ready, timeout=420, interval=2, what="replica loads of every partition")
        yield {"http_port": http_port, "since_ms": int(time.time() * 1000)}
    finally:
        loads.stop()
        traffic.stop()


def test_a_killed_broker_is_healed_on_the_secured_cluster(
    secure_cluster: LocalCluster, pipeline: Pipeline, healing: dict[str, Any]
) -> None:
    client = secure_cluster.client
    before = partitions(client, [TOPIC])
    assert any(VICTIM in replicas for replicas, _ in before.values())
    secure_cluster.kill(VICTIM)

    def healed() -> bool:
        pipeline.check_running()
        now = partitions(client, [TOPIC])
        return all(
            VICTIM not in replicas and len(replicas) == 2 and sorted(isr) == sorted(replicas)
            for replicas, isr in now.values()
        )

    wait_for(healed, timeout=240, interval=2, what=f"{TOPIC} healed off broker {VICTIM}")

    def heal_recorded() -> list[AuditRecord]:
        records = audit_records(client, healing["since_ms"])
        return records if any(r.kind == "action_started" for r in records) else []

    # A record the manager spooled while the audit topic had no leader arrives on replay.
    records = wait_for(heal_recorded, timeout=60, interval=2, what="the heal's audit records")
    acts = [r for r in records if r.kind == "decision" and r.summary.startswith("act")]
    assert acts and f"heal dead brokers {VICTIM}:" in acts[0].summary, [
        r.summary for r in records if r.kind == "decision"
    ]

    # The audit log is read back with the same config the manager runs with.
    tail = subprocess.run(
        [
            sys.executable,
            "-m",
            "composition.cli",
            "actions",
            "tail",
            "--config",
            str(pipeline.roles["manager"].config),
            "--since",
            "15m",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert tail.returncode == 0, tail.stderr
    assert "rdkafka" not in tail.stderr, tail.stderr  # client log lines are DEBUG, not shown
    assert f"heal dead brokers {VICTIM}:" in tail.stdout, tail.stdout[-2000:]
    assert "action_started" in tail.stdout, tail.stdout[-2000:]
    healing["tail"] = tail.stdout + tail.stderr


def test_each_role_may_do_only_what_it_is_granted(
    secure_cluster: LocalCluster, healing: dict[str, Any]
) -> None:
    """The brokers run an authorizer: the agent's identity may publish stats but may not
    write the audit log, the one place on-call trusts to say what kmedic did (both topics
    exist by now)."""
    agent = secure_cluster.client_as(role_user("agent"))

    def produce(topic: str) -> str | None:
        errors: list[str] = []
        producer = Producer(kafka_conf(agent, {"message.timeout.ms": 10_000, "log_level": 0}))
        producer.produce(topic, b"x", on_delivery=lambda err, _m: errors.append(str(err or "")))
        producer.flush(20)
        return errors[0] if errors else "no delivery report"

    assert produce("kmedic.brokerstats") == ""
    refused = produce("kmedic.actions")
    assert "TOPIC_AUTHORIZATION_FAILED" in refused or "not authorized" in refused.lower(), refused


def test_no_password_appears_in_anything_kmedic_wrote(
    secure_cluster: LocalCluster,
    pipeline: Pipeline,
    healing: dict[str, Any],
    role_outputs: list[str],
) -> None:
    security = secure_cluster.security
    assert security is not None
    secrets = {security.password(user) for user in USERS} | {WRONG_PASSWORD}
    port = healing["http_port"]
    pages = {
        path: urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).read()
        for path in ("/status", "/status.json", "/metrics")
    }
    records = audit_records(secure_cluster.client, 0)
    outputs: dict[str, str] = {
        **{f"GET {path}": body.decode() for path, body in pages.items()},
        "audit log": "\n".join(r.model_dump_json() for r in records),
        "actions tail": healing.get("tail", ""),
        **{f"refused role #{i}": text for i, text in enumerate(role_outputs)},
    }
    # Every file the pipeline wrote: role logs, configs, the saved snapshot, the spool.
    for path in sorted(pipeline.workdir.rglob("*")):
        if path.is_file():
            outputs[str(path)] = path.read_bytes().decode("utf-8", "replace")
    assert (pipeline.workdir / "snapshot.json").is_file(), "the manager saved no snapshot"
    assert len(role_outputs) == 6, "the refusal tests did not all run"
    leaks = [(where, s) for where, text in outputs.items() for s in secrets if s in text]
    assert not leaks, f"secrets found in: {sorted({where for where, _ in leaks})}"
