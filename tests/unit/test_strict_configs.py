"""Every shipped example config, with a typo in each of its sections, is refused with the file,
the field path, the key meant and the keys allowed; wrong types and out-of-range values too."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from agent.config import load_agent_config
from kmedic.errors import ConfigError
from manager.config import load_manager_config
from streaming.config import load_stream_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
LOADERS: dict[str, Callable[[Path], BaseModel]] = {
    "agent.example.yaml": load_agent_config,
    "stream.example.yaml": load_stream_config,
    "stream.production.yaml": load_stream_config,
    "manager.example.yaml": load_manager_config,
}


def _sections(doc: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for key, value in doc.items():
        if isinstance(value, dict) and value:
            yield from _sections(value, (*path, key))


def _cases() -> list[tuple[str, tuple[str, ...]]]:
    out = []
    for name in LOADERS:
        doc = yaml.safe_load((CONFIGS / name).read_text())
        out += [(name, path) for path in _sections(doc)]
    return out


def _misspelt(key: str) -> str:
    """One letter dropped (or, for a short key, one added)."""
    return key[:3] + key[4:] if len(key) >= 5 else key + "x"


def _node(doc: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for part in path:
        doc = doc[part]
    return doc


@pytest.fixture(autouse=True)
def _no_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [v for v in os.environ if v.startswith("KMEDIC_")]:
        monkeypatch.delenv(var)


def test_every_example_config_loads_as_shipped() -> None:
    for name, load in LOADERS.items():
        load(CONFIGS / name)


def test_there_are_sections_to_try() -> None:
    assert len(_cases()) >= 15


@pytest.mark.parametrize(
    ("name", "path"), _cases(), ids=[f"{n}:{'.'.join(p) or 'top'}" for n, p in _cases()]
)
def test_a_typo_in_every_section_is_refused(
    name: str, path: tuple[str, ...], tmp_path: Path
) -> None:
    doc = yaml.safe_load((CONFIGS / name).read_text())
    section = _node(doc, path)
    key = next(iter(section))
    typo = _misspelt(key)
    mangled = copy.deepcopy(doc)
    target = _node(mangled, path)
    target[typo] = target.pop(key)
    file = tmp_path / name
    file.write_text(yaml.safe_dump(mangled))
    where = ".".join((*path, typo))
    with pytest.raises(ConfigError) as err:
        LOADERS[name](file)
    text = str(err.value)
    assert f"{file}: {where}: unknown key; did you mean {key!r}?" in text
    assert "allowed here: " in text and key in text.split("allowed here: ")[1]


BAD_VALUES = [
    ("manager.example.yaml", ("zookeeper", "session_expired_policy"), "stop", "'reconnect'"),
    ("manager.example.yaml", ("interval_s",), -1, "greater than 0"),
    ("manager.example.yaml", ("http", "port"), 70000, "less than or equal to 65535"),
    ("manager.example.yaml", ("policy", "limits", "disk_fraction"), "most", "valid number"),
    ("manager.example.yaml", ("executor", "max_moves_in_flight"), 0, "greater than or equal"),
    ("agent.example.yaml", ("interval_s",), "soon", "valid number"),
    ("stream.example.yaml", ("topics",), ["a"], "valid dictionary"),
]


@pytest.mark.parametrize(("name", "path", "value", "said"), BAD_VALUES)
def test_wrong_types_and_out_of_range_values_are_refused_with_their_path(
    name: str, path: tuple[str, ...], value: Any, said: str, tmp_path: Path
) -> None:
    doc = yaml.safe_load((CONFIGS / name).read_text())
    node = doc
    for part in path[:-1]:
        node = node.setdefault(part, {})
    node[path[-1]] = value
    file = tmp_path / name
    file.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as err:
        LOADERS[name](file)
    line = next(ln for ln in str(err.value).splitlines() if ".".join(path) in ln)
    assert line.startswith(f"{file}: {'.'.join(path)}")
    assert said in line
