"""Unsafe topics on the real cluster: `kmedic topics check` names each topic whose RF is below
the minimum or whose min.insync.replicas blocks writes or loses them, and exits 3; the
manager's monitor reads the same settings into its snapshot."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import kmedic_in_process, wait_for
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

from manager.analyzer.replication_check import replication_settings_off
from manager.analyzer.topic_safety import unsafe_topics
from manager.model.placement_config import PlacementConfig
from manager.model.policy import Policy
from manager.model.replication_settings import WANTED, ReplicationSettings
from manager.model.snapshot import Leadership
from manager.monitor.observe import CapacitySettings, build_snapshot
from manager.monitor.sources import ClusterSources
from manager.monitor.topic_configs import topic_configs

pytestmark = pytest.mark.integration


@pytest.fixture
def topics(local_cluster: Any) -> Iterator[dict[str, str]]:
    tag = uuid.uuid4().hex[:6]
    wanted = {
        "single": (1, None),
        "strict": (2, "2"),
        "loose": (3, "1"),
        "safe": (3, "2"),
    }
    names = {kind: f"{kind}-{tag}" for kind in wanted}
    admin = KafkaAdminClient(bootstrap_servers=local_cluster.bootstrap_servers)
    admin.create_topics(
        [
            NewTopic(
                names[kind],
                num_partitions=2,
                replication_factor=rf,
                topic_configs={"min.insync.replicas": isr} if isr else {},
            )
            for kind, (rf, isr) in wanted.items()
        ]
    )
    yield names
    admin.delete_topics(list(names.values()))
    admin.close()


def test_topics_check_names_each_unsafe_topic_and_exits_3(
    local_cluster: Any, topics: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = local_cluster.bootstrap_servers

    def check() -> list[dict[str, Any]] | None:
        code, out, _ = kmedic_in_process(
            capsys, "topics", "check", "--bootstrap", bootstrap, "--json"
        )
        found = [u for u in json.loads(out) if u["topic"] in topics.values()]
        return found if code == 3 and len(found) == 3 else None

    found = wait_for(check, timeout=30, what="the three unsafe topics listed")
    assert sorted((u["topic"], u["kind"]) for u in found) == sorted(
        [
            (topics["loose"], "min_isr_loses_writes"),
            (topics["single"], "below_min_rf"),
            (topics["strict"], "min_isr_blocks_writes"),
        ]
    )
    strict = next(u for u in found if u["topic"] == topics["strict"])
    assert strict["replication_factor"] == 2 and strict["min_insync_replicas"] == 2
    code, out, _ = kmedic_in_process(
        capsys, "topics", "check", "--bootstrap", bootstrap, "--min-rf", "4"
    )
    assert code == 3
    assert f"{topics['safe']}: RF 3 is below the minimum 4" in out.splitlines()


def test_the_monitor_reads_each_topics_min_insync_replicas(
    local_cluster: Any, topics: dict[str, str]
) -> None:
    client = KafkaAdminClient(bootstrap_servers=local_cluster.bootstrap_servers)
    configs = topic_configs()  # a topic it could not read yet is asked for again at each read
    try:
        names = set(topics.values())
        read = wait_for(
            lambda: (r := configs.read(client, names)).keys() >= names and r,
            timeout=30,
            what="every new topic's setting read",
        )
    finally:
        client.close()
    assert read[topics["strict"]] == 2 and read[topics["safe"]] == 2
    assert read[topics["loose"]] == 1
    assert topics["single"] in read  # the broker's default, effective for it


def test_no_kafka_given_is_a_clear_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KMEDIC_BOOTSTRAP", raising=False)
    monkeypatch.delenv("KMEDIC_BOOTSTRAP_SERVERS", raising=False)
    code, _, err = kmedic_in_process(capsys, "topics", "check")
    assert code == 1 and "no Kafka given" in err
    code, _, err = kmedic_in_process(
        capsys, "topics", "check", "--bootstrap", "x:1", "--min-rf", "0"
    )
    assert code == 1 and "--min-rf 0" in err


def test_the_managers_snapshot_carries_the_settings_and_finds_the_unsafe_topics(
    local_cluster: Any, topics: dict[str, str]
) -> None:
    sources = ClusterSources(
        cluster="test",
        bootstrap=local_cluster.bootstrap_servers,
        stats_topic="kmedic.brokerstats",
        loads_topic="kmedic.replica-loads",
        stats_lookback_s=60,
    )

    snaps: list[Any] = []

    def unsafe() -> list[tuple[str, str]] | None:
        obs = sources.observe(
            int(time.time() * 1000),
            placement=PlacementConfig(),
            leadership=Leadership(holder="m1", epoch=1, current_epoch=1, is_leader=True),
            own_moves=frozenset(),
            moves_last_hour=0,
        )
        snap = build_snapshot(obs, Policy(), CapacitySettings())
        snaps.append(snap)
        mine = {t.name: t.min_insync_replicas for t in snap.topics if t.name in topics.values()}
        if len(mine) < len(topics) or None in mine.values():
            return None  # a topic just created: its setting is read at the next cycle
        return sorted(
            (u.topic, u.kind)
            for u in unsafe_topics(snap, snap.policy)
            if u.topic in topics.values()
        )

    try:
        found = wait_for(unsafe, timeout=30, what="every new topic's setting in the snapshot")
    finally:
        sources.stop_admin_clients()
    assert found == sorted(
        [
            (topics["loose"], "min_isr_loses_writes"),
            (topics["single"], "below_min_rf"),
            (topics["strict"], "min_isr_blocks_writes"),
        ]
    )
    # Each live broker's static replication settings, read from it: this cluster's brokers
    # run Kafka's (an 11 s quota window, a 1 s fetch backoff, a 500 ms fetch wait), each
    # named off what kmedic's throttled copies are measured at (issue 73).
    snap = snaps[-1]
    live = [b for b in snap.brokers if b.alive]
    assert live and all(
        b.replication
        == ReplicationSettings(quota_window_s=11.0, fetch_backoff_ms=1000, fetch_wait_ms=500)
        for b in live
    ), [b.replication for b in live]
    off = replication_settings_off(snap)
    assert {(o.broker, o.setting) for o in off} == {
        (b.id, s) for b in live for s in (w.setting for w in WANTED)
    }
    assert "replication.quota.window 11 s, over the 1 s" in off[0].sentence()


def test_a_topic_without_a_setting_of_its_own_gets_the_controllers_cluster_default(
    local_cluster: Any, topics: dict[str, str]
) -> None:
    # Why docs/alerts.md asks for min.insync.replicas on the controllers, and why
    # ClusterSpec.min_insync_replicas writes it there: with eligible leader replicas (on in a
    # new Kafka 4.1+ cluster) the controllers write the cluster-wide default from their own
    # config, and it outranks every broker's server.properties. The soak set 2 on its brokers
    # alone and KmedicUnsafeTopic rightly went on warning of its internal topics.
    client = KafkaAdminClient(bootstrap_servers=local_cluster.bootstrap_servers)
    name = topics["single"]
    wanted = ConfigResource(ConfigResourceType.TOPIC, name, configs={"min.insync.replicas": None})
    try:
        found = wait_for(
            lambda: (
                client.describe_configs([wanted], include_synonyms=True, config_filter="all")
                .get("topic", {})
                .get(name, {})
                .get("min.insync.replicas")
            ),
            timeout=30,
            what=f"{name}'s min.insync.replicas described",
        )
    finally:
        client.close()
    assert found["config_source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG", found


def test_kmedics_own_topics_pass_its_own_check(
    local_cluster: Any, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 72: `kmedic topics check` flagged kmedic's own topics. Each is created by its
    role's setting (kmedic/own_topics.py: the stats topic at min.insync.replicas 2, the audit,
    load and dead-letter topics at 1 on purpose, written through the losses kmedic handles)
    and the check, given the manager's config, judges them by that setting: none is listed.
    The same audit topic under a name the config does not give is listed (min ISR 1 at RF 3
    loses writes), as any topic of an operator's would be."""
    from streaming_support import stream_config

    from agent.config import AgentConfig
    from agent.publisher import ensure_topic
    from manager.audit.kafka_sink import ensure_audit_topic
    from manager.cli.topics import read_facts
    from streaming.config import TopicsConfig
    from streaming.topics import ensure_output_topics

    bootstrap = local_cluster.bootstrap_servers
    tag = uuid.uuid4().hex[:6]
    stats, actions = f"kmedic.brokerstats.own-{tag}", f"kmedic.actions.own-{tag}"
    agent = AgentConfig.model_validate(
        {"broker_id": 1, "bootstrap": bootstrap, "exporter_url": "http://127.0.0.1:1/m"}
        | {"topic": stats}
    )
    assert ensure_topic(agent)
    ensure_audit_topic(bootstrap, actions)
    names = TopicsConfig(
        brokerstats=stats,
        replica_loads=f"kmedic.replica-loads.own-{tag}",
        broker_loads=f"kmedic.broker-loads.own-{tag}",
        dlq="kmedic.brokerstats.dlq",  # the stream's default: the manager's config has no name
    )
    ensure_output_topics(stream_config(bootstrap, stats, tmp_path / "cp", topics=names))
    own = [stats, actions, names.replica_loads, names.broker_loads]
    config = tmp_path / "manager.yaml"
    config.write_text(
        f"cluster: own-{tag}\nbootstrap: {bootstrap}\nzookeeper: {{zk_connect: 127.0.0.1:1}}\n"
        f"topics: {{brokerstats: {stats}, actions: {actions}, "
        f"replica_loads: {names.replica_loads}, broker_loads: {names.broker_loads}}}\n"
    )
    code, out, err = kmedic_in_process(capsys, "topics", "check", "--config", str(config), "--json")
    assert code in (0, 3), err  # other tests' topics may be unsafe
    listed = {u["topic"] for u in json.loads(out)}
    code, out, err = kmedic_in_process(
        capsys, "topics", "check", "--bootstrap", bootstrap, "--json"
    )
    unnamed = {u["topic"]: u["kind"] for u in json.loads(out)}
    facts = {t.name: t for t in read_facts(bootstrap) if t.name in [*own, names.dlq]}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.delete_topics(own)
    admin.close()
    made = {(n, t.replication_factor, t.min_insync_replicas) for n, t in facts.items()}
    assert made >= {(stats, 3, 2), *((n, 3, 1) for n in own[1:])}, facts
    assert not listed & {*own, names.dlq}, listed
    assert unnamed.get(actions) == "min_isr_loses_writes", unnamed  # not named as kmedic's
    assert stats not in unnamed, unnamed
