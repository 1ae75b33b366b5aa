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
