"""The stream config (YAML + KMEDIC_STREAM env), durations, and the connector jar selection."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kmedic.config import load_config
from kmedic.errors import ConfigError, KmedicError
from streaming import topics
from streaming.config import ENV_PREFIX, StreamConfig, duration_seconds, spark_interval
from streaming.session import connector_jars

EXAMPLE = Path(__file__).resolve().parents[2] / "configs" / "stream.example.yaml"
PRODUCTION = EXAMPLE.with_name("stream.production.yaml")


def test_the_example_config_loads_with_short_demo_windows() -> None:
    cfg = load_config(StreamConfig, EXAMPLE, env_prefix=ENV_PREFIX, env={})
    assert duration_seconds(cfg.window) <= 300
    assert cfg.topics.replica_loads == "kmedic.replica-loads"


def test_production_defaults_are_a_48h_max() -> None:
    cfg = StreamConfig()
    assert duration_seconds(cfg.window) == 48 * 3600
    assert cfg.statistic == "max" and cfg.percentile is None
    assert cfg.spark.master == "local[*]"


def test_the_production_config_is_what_the_defaults_are() -> None:
    # bench/bench_streaming.py runs configs/stream.production.yaml; a config that leaves a key
    # out gets the default, so the two must not drift apart.
    production = yaml.safe_load(PRODUCTION.read_text())
    cfg = load_config(StreamConfig, PRODUCTION, env_prefix=ENV_PREFIX, env={})
    defaults = StreamConfig()
    for key, value in production.items():
        if isinstance(value, dict):
            assert getattr(cfg, key) == getattr(defaults, key), key
        else:
            assert getattr(defaults, key) == value, key
    assert {"window", "slide", "max_offsets_per_trigger", "spark"} <= set(production)
    assert defaults.spark.driver_memory == "2g"


def test_the_lateness_check_is_off_unless_set() -> None:
    assert StreamConfig(watermark="7m").validation.max_lateness is None
    cfg = StreamConfig(watermark="7m", validation={"max_lateness": "2m"})  # type: ignore[arg-type]
    assert cfg.validation.max_lateness == "2m"


def test_env_overrides_reach_nested_fields(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("window: 30s\nslide: 10s\n")
    env = {
        "KMEDIC_STREAM__STATISTIC": "p99",
        "KMEDIC_STREAM__TOPICS__DLQ": "other.dlq",
        "KMEDIC_STREAM__SPARK__SHUFFLE_PARTITIONS": "3",
    }
    cfg = load_config(StreamConfig, path, env_prefix=ENV_PREFIX, env=env)
    assert cfg.percentile == pytest.approx(0.99)
    assert cfg.topics.dlq == "other.dlq"
    assert cfg.spark.shuffle_partitions == 3


@pytest.mark.parametrize(
    ("yaml_text", "fragment"),
    [
        ("window: forever\n", "window"),
        ("slide: 0s\n", "slide"),
        ("statistic: p0\n", "statistic"),
        ("window: 10s\nslide: 20s\n", "longer than window"),
        ("window: 48h\nslide: 1m\n", "more than 1000 windows"),
        ("checkpoint: /tmp\n", "checkpoint"),
        ("validation:\n  max_array_entries: 0\n", "validation.max_array_entries"),
        ("starting_offsets: middle\n", "starting_offsets"),
        ("watermark: 10m\nvalidation:\n  max_lateness: 1h\n", "longer than the watermark"),
        ("validation:\n  max_lateness: soon\n", "validation.max_lateness"),
    ],
)
def test_bad_configs_name_the_field(tmp_path: Path, yaml_text: str, fragment: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml_text)
    with pytest.raises(ConfigError, match=fragment) as info:
        load_config(StreamConfig, path, env_prefix=ENV_PREFIX, env={})
    assert str(path) in str(info.value)


@given(st.integers(1, 10**6), st.sampled_from(["ms", "s", "m", "h", "d"]))
def test_durations_round_trip_to_spark_intervals(n: int, unit: str) -> None:
    seconds = duration_seconds(f"{n}{unit}")
    assert seconds > 0
    assert spark_interval(f"{n}{unit}") == f"{round(seconds * 1000)} milliseconds"


def test_connector_jars_skip_what_pyspark_ships(tmp_path: Path) -> None:
    for name in (
        "spark-sql-kafka-0-10_2.13-4.0.0.jar",
        "kafka-clients-3.9.0.jar",
        "commons-pool2-2.12.0.jar",
        "scala-library-2.13.15.jar",
        "hadoop-client-runtime-3.4.1.jar",
        "slf4j-api-1.7.36.jar",
    ):
        (tmp_path / name).write_bytes(b"")
    names = [j.name for j in connector_jars(tmp_path)]
    assert names == [
        "commons-pool2-2.12.0.jar",
        "kafka-clients-3.9.0.jar",
        "spark-sql-kafka-0-10_2.13-4.0.0.jar",
    ]


def test_a_missing_connector_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KmedicError, match="make bootstrap"):
        connector_jars(tmp_path)


def test_kmedic_stream_with_a_bad_config_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from composition.cli import main

    path = tmp_path / "stream.yaml"
    path.write_text("window: 30s\nslide: 1m\n")
    assert main(["stream", "--config", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"kmedic: error: {path}: (top level): Value error, slide 1m is longer than window 30s"
    ]


def test_java_client_settings_do_not_reach_the_librdkafka_admin() -> None:
    # default.api.timeout.ms is a Java client setting: librdkafka refuses the name.
    cfg = StreamConfig(
        bootstrap="127.0.0.1:1",
        kafka_options={"default.api.timeout.ms": "5000"},
        admin_options={"socket.timeout.ms": "5000"},
    )
    assert topics.admin_client(cfg) is not None


def test_a_bad_admin_option_is_named() -> None:
    cfg = StreamConfig(bootstrap="127.0.0.1:1", admin_options={"no.such.key": "1"})
    with pytest.raises(KmedicError, match=r'admin_options: .*"no\.such\.key"'):
        topics.admin_client(cfg)


def test_the_kafka_address_is_bootstrap_as_in_every_roles_config() -> None:
    """One name for the Kafka address (issue 43): ``bootstrap``, as the agent's and the
    manager's; the former ``bootstrap_servers`` is still read, and both at once is refused."""
    assert StreamConfig(bootstrap="10.0.0.1:9092").cluster_client == "10.0.0.1:9092"
    assert StreamConfig.model_validate({"bootstrap_servers": "10.0.0.2:9092"}).bootstrap == (
        "10.0.0.2:9092"
    )
    with pytest.raises(ValueError, match="give bootstrap only"):
        StreamConfig.model_validate({"bootstrap": "a:1", "bootstrap_servers": "b:1"})


def test_sparks_scratch_goes_where_local_dir_says_and_spark_conf_still_wins() -> None:
    # Found in /tmp after the tests and the soak: the scratch directories (spark-*,
    # blockmgr-*) of every Spark job they SIGKILLed.
    from streaming.config import SparkConfig
    from streaming.session import session_settings

    settings = session_settings(SparkConfig(master="local[2]", local_dir="/run/x"))
    assert settings["spark.local.dir"] == "/run/x"
    assert "-Djava.io.tmpdir=/run/x" in settings["spark.driver.extraJavaOptions"].split()
    assert "-Dlog4j2.configurationFile=" in settings["spark.driver.extraJavaOptions"]
    unset = session_settings(SparkConfig(master="local[2]"))
    assert "spark.local.dir" not in unset
    assert "java.io.tmpdir" not in unset["spark.driver.extraJavaOptions"]
    submitted = session_settings(SparkConfig(master=None, local_dir="/run/x"))
    assert submitted["spark.local.dir"] == "/run/x"  # the JVM is spark-submit's own
    assert "spark.driver.extraJavaOptions" not in submitted
    wins = SparkConfig(master="local[2]", local_dir="/run/x", conf={"spark.local.dir": "/y"})
    assert session_settings(wins)["spark.local.dir"] == "/y"


def test_driver_java_options_come_after_kmedics_own_and_only_for_a_driver_it_starts() -> None:
    from streaming.config import SparkConfig
    from streaming.session import session_settings

    light = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]
    options = session_settings(
        SparkConfig(master="local[2]", local_dir="/run/x", driver_java_options=light)
    )["spark.driver.extraJavaOptions"].split()
    assert options[-2:] == light and options[0].startswith("-Dlog4j2.configurationFile=")
    submitted = session_settings(SparkConfig(master=None, driver_java_options=light))
    assert "spark.driver.extraJavaOptions" not in submitted  # spark-submit's JVM, its options
