"""kmedic.config: YAML + environment overrides into typed models, errors naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from kmedic.config import load_config
from kmedic.errors import ConfigError


class Inner(BaseModel):
    port: int = 9000


class Sample(BaseModel):
    bootstrap: str
    interval_s: float = Field(default=60.0, gt=0)
    inner: Inner = Inner()


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(text)
    return path


def test_reads_yaml_and_defaults(tmp_path: Path) -> None:
    cfg = load_config(Sample, write(tmp_path, "bootstrap: a:1\n"), env_prefix="K", env={})
    assert cfg == Sample(bootstrap="a:1")


def test_environment_overrides_nested_fields(tmp_path: Path) -> None:
    env = {"K__INTERVAL_S": "5", "K__INNER__PORT": "9100", "OTHER": "x"}
    cfg = load_config(Sample, write(tmp_path, "bootstrap: a:1\n"), env_prefix="K", env=env)
    assert cfg.interval_s == 5.0
    assert cfg.inner.port == 9100


def test_env_alone_is_enough_without_a_file() -> None:
    cfg = load_config(Sample, None, env_prefix="K", env={"K__BOOTSTRAP": "b:2"})
    assert cfg.bootstrap == "b:2"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bootstrap: a\ninterval_s: -1\n", "interval_s"),
        ("interval_s: 3\n", "bootstrap"),
        ("bootstrap: a\ninner: {port: nope}\n", "inner.port"),
        ("- a\n- b\n", "must be a mapping"),
        ("bootstrap: [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_config_names_the_problem(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(Sample, path, env_prefix="K", env={})
    assert expected in str(err.value)
    assert str(path) in str(err.value)


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(Sample, tmp_path / "absent.yaml", env_prefix="K", env={})


# ---- issue 39.9: a duplicate key, an override's error, a file that is not UTF-8 ----------

APPENDED_POLICY = """\
cluster: c
bootstrap: a:9092
zookeeper: {zk_connect: z:2181}
policy:
  max_dead_brokers: 1
  max_moves_per_cycle: 50
interval_s: 30
policy:
  max_dead_brokers: 2
"""


def test_a_second_policy_block_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    from manager.config import load_manager_config

    path = tmp_path / "manager.yaml"
    path.write_text(APPENDED_POLICY)
    with pytest.raises(ConfigError) as err:
        load_manager_config(path)
    assert str(err.value) == (
        f"{path}: key 'policy' is given twice, on line 4 and on line 8 (the second would "
        "silently replace the first)"
    )


def test_a_duplicate_key_deep_inside_is_found_too(tmp_path: Path) -> None:
    from manager.config import load_manager_config

    path = tmp_path / "manager.yaml"
    path.write_text(
        "cluster: c\nbootstrap: a:9092\nzookeeper:\n  zk_connect: z:2181\n  zk_connect: y:2181\n"
    )
    with pytest.raises(ConfigError, match="'zk_connect' is given twice, on line 4 and on line 5"):
        load_manager_config(path)


def test_every_config_kmedic_reads_refuses_duplicate_keys(tmp_path: Path) -> None:
    from agent.config import load_agent_config
    from kmedic.web_config import load_web_config
    from streaming.config import load_stream_config

    for loader in (load_agent_config, load_stream_config):
        path = tmp_path / "role.yaml"
        path.write_text("interval_s: 1\ninterval_s: 2\n")
        with pytest.raises(ConfigError, match="'interval_s' is given twice"):
            loader(path)
    web = tmp_path / "web.yaml"
    web.write_text("basic_auth_users: {}\nbasic_auth_users: {}\n")
    with pytest.raises(ConfigError, match="'basic_auth_users' is given twice, on line 1 and"):
        load_web_config(web)


def test_a_wrong_override_is_named_as_the_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from manager.config import load_manager_config

    path = tmp_path / "manager.yaml"
    path.write_text("cluster: c\nbootstrap: a:9092\nzookeeper: {zk_connect: z:2181}\n")
    env = "KMEDIC_MANAGER__POLICY__MAX_DEAD_BROKERS"
    monkeypatch.setenv(env, "-3")
    with pytest.raises(ConfigError) as err:
        load_manager_config(path)
    assert str(err.value).startswith(
        f"{env} (environment, overriding {path}): policy.max_dead_brokers:"
    )


def test_a_config_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    from manager.config import load_manager_config

    path = tmp_path / "manager.yaml"
    path.write_bytes(b"cluster: caf\xe9\n")
    with pytest.raises(ConfigError, match=r"manager.yaml: not UTF-8 text \(byte 12 is 0xe9\)"):
        load_manager_config(path)
