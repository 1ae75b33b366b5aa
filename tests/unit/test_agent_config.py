"""The agent configuration: the example file, defaults, environment overrides, bad input."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from agent.cli import register
from agent.config import AgentConfig, load_agent_config
from agent.metrics import AgentMetrics
from composition.cli import build_parser
from kmedic.config import load_config
from kmedic.errors import ConfigError, KmedicError

EXAMPLE = Path(__file__).resolve().parents[2] / "configs" / "agent.example.yaml"


def test_example_config_loads() -> None:
    cfg = load_agent_config(EXAMPLE)
    assert cfg.broker_id == 1
    assert cfg.interval_s == 60
    assert cfg.topic == "kmedic.brokerstats"
    assert cfg.compression == "zstd"


def test_defaults_and_env_overrides(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("broker_id: 3\nbootstrap: h:1\nexporter_url: http://h:2/metrics\n")
    env = {"KMEDIC_AGENT__INTERVAL_S": "5", "KMEDIC_AGENT__TOPIC_SETTINGS__PARTITIONS": "12"}
    cfg = load_config(AgentConfig, path, env_prefix="KMEDIC_AGENT", env=env)
    assert cfg.interval_s == 5
    assert cfg.topic_settings.partitions == 12
    assert cfg.cluster == "default"
    assert cfg.metrics_port == 9464


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("bootstrap: h:1\nexporter_url: http://h:1/m\n", "broker_id"),
        ("broker_id: 1\nbootstrap: h:1\nexporter_url: http://h:1/m\ninterval_s: 0\n", "interval_s"),
        (
            "broker_id: 1\nbootstrap: h:1\nexporter_url: http://h:1/m\ncompression: brotli\n",
            "compression",
        ),
        (
            "broker_id: 1\nbootstrap: h:1\nexporter_url: http://h:1/m\nintervall_s: 3\n",
            "intervall_s",
        ),
        ("broker_id: 1\nbootstrap: h:1\nexporter_url: h:1/metrics\n", "exporter_url"),
        (
            "broker_id: 1\nbootstrap: h:1\nexporter_url: http://h:1/m\nbroker_address: h\n",
            "broker_address",
        ),
    ],
)
def test_bad_config_names_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=field):
        load_agent_config(path)


def test_cli_registers_the_agent_command() -> None:
    assert callable(register)
    args = build_parser().parse_args(["agent", "--config", str(EXAMPLE)])
    assert args.command == "agent"
    assert args.config == EXAMPLE


def test_metrics_port_in_use_is_a_clear_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(KmedicError, match=f"cannot serve /metrics on 127.0.0.1:{port}"):
            AgentMetrics(1).serve("127.0.0.1", port)
