"""The manager's config: the shipped example loads; mistakes name their field."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmedic.errors import ConfigError
from manager.config import load_manager_config

EXAMPLE = Path(__file__).resolve().parents[2] / "configs" / "manager.example.yaml"


def test_the_example_config_loads() -> None:
    cfg = load_manager_config(EXAMPLE)
    assert cfg.cluster == "prod-eu-1"
    assert cfg.policy.dead_grace_ms == 600_000
    assert cfg.zookeeper.session_expired_policy == "reconnect"
    assert cfg.capacity.disk_bytes is None


def test_a_new_install_observes(tmp_path: Path) -> None:
    """Issue 39.8: the shipped example and a config with no ``mode`` start in observe mode:
    copying the example and starting the unit, as docs/operations.md says, acts on nothing."""
    assert load_manager_config(EXAMPLE).mode == "observe"
    bare = tmp_path / "bare.yaml"
    bare.write_text("cluster: c\nbootstrap: a:9092\nzookeeper: {zk_connect: z:2181}\n")
    assert load_manager_config(bare).mode == "observe"


def test_environment_overrides_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KMEDIC_MANAGER__POLICY__DEAD_GRACE_MS", "1234")
    assert load_manager_config(EXAMPLE).policy.dead_grace_ms == 1234


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("bootstrap: a\nzookeeper: {zk_connect: z}\n", "cluster"),
        ("cluster: c\nbootstrap: a\n", "zookeeper"),
        ("cluster: c/d\nbootstrap: a\nzookeeper: {zk_connect: z}\n", "cluster"),
        (
            "cluster: c\nbootstrap: a\nzookeeper: {zk_connect: z}\n"
            "policy: {max_dead_fraction: 2}\n",
            "policy.max_dead_fraction",
        ),
        ("cluster: c\nbootstrap: a\nzookeeper: {zk_connect: z}\nintervl_s: 3\n", "intervl_s"),
        (
            "cluster: c\nbootstrap: a\nzookeeper: {zk_connect: z}\n"
            "executor: {throttle_bytes_per_s: fast}\n",
            "executor.throttle_bytes_per_s",
        ),
        (
            "cluster: c\nbootstrap: a\nzookeeper: {zk_connect: z}\n"
            "executor: {throttle_bytes_per_s: adaptive, adaptive: {ratio: 1.5}}\n",
            "executor.adaptive.ratio",
        ),
    ],
)
def test_bad_config_names_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_manager_config(path)
    assert field in str(err.value)


def test_kmedics_own_topics_may_live_on_an_operations_cluster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agents could publish to another cluster (their publish_bootstrap) but the manager
    read its feeds and wrote its audit log only on the cluster it looks after: with
    own_topics_bootstrap it reads the stats and loads and writes the audit there, and keeps
    its Admin reads on the cluster looked after."""
    import manager.monitor.feeds as feeds
    from manager.daemon.wiring import sources_for
    from manager.monitor.feed_process import ProcessFeeds

    made = tmp_path / "ops.yaml"
    made.write_text(
        "cluster: c\nbootstrap: kafka:9092\nown_topics_bootstrap: ops:9092\n"
        "zookeeper: {zk_connect: z:2181}\n"
    )
    cfg = load_manager_config(made)
    assert (cfg.cluster_client, cfg.own_topics_client) == ("kafka:9092", "ops:9092")
    servers: list[str] = []

    class Consumer:
        def __init__(self, conf: dict[str, object]) -> None:
            servers.append(str(conf["bootstrap.servers"]))

    monkeypatch.setattr(feeds, "Consumer", Consumer)
    sources = sources_for(cfg)  # as shipped: the feeds' child process is given the address
    assert isinstance(sources.feeds, ProcessFeeds) and sources.feeds._spec.cluster == "ops:9092"
    assert sources._bootstrap == "kafka:9092"
    sources = sources_for(cfg.model_copy(update={"feed_process": False}))
    # The stats feed, the client that asks its partitions' leaders how far it has read, and
    # the loads feed.
    assert servers == ["ops:9092", "ops:9092", "ops:9092"]
    assert sources._bootstrap == "kafka:9092"
    bare = tmp_path / "bare.yaml"
    bare.write_text("cluster: c\nbootstrap: kafka:9092\nzookeeper: {zk_connect: z:2181}\n")
    assert load_manager_config(bare).own_topics_client == "kafka:9092"
    both = tmp_path / "both.yaml"
    both.write_text(
        "cluster: c\nbootstrap: k:1\nown_topics_bootstrap: o:1\n"
        "own_topics_kafka: {bootstrap: o:1}\nzookeeper: {zk_connect: z:2181}\n"
    )
    with pytest.raises(ConfigError, match="at most one of own_topics_bootstrap"):
        load_manager_config(both)
