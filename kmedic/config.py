"""Loading YAML configuration into typed pydantic models, with environment overrides.

Every role (agent, stream, manager) has its own model; they share this loader so every bad
config gets the same kind of message: the file, the field, and what is wrong with it.

Environment overrides: ``KMEDIC_<ROLE>__<FIELD>[__<SUBFIELD>...]`` (double underscore between
levels), e.g. ``KMEDIC_AGENT__INTERVAL_S=10``. Values are parsed as YAML scalars.
"""

from __future__ import annotations

import difflib
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from kmedic import yaml_strict
from kmedic.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def _apply_env(
    data: dict[str, Any], prefix: str, env: Mapping[str, str]
) -> dict[tuple[str, ...], str]:
    """Apply the overrides to ``data`` in place; returns each overridden key path with the
    variable that set it, so that an error in its value names the variable, not the file."""
    marker = f"{prefix}__"
    applied: dict[tuple[str, ...], str] = {}
    for key, raw in env.items():
        if not key.startswith(marker):
            continue
        path = [p.lower() for p in key[len(marker) :].split("__") if p]
        if not path:
            continue
        node = data
        for part in path[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[path[-1]] = yaml.safe_load(raw) if raw != "" else ""
        applied[tuple(path)] = key
    return applied


def describe_validation_error(
    exc: ValidationError,
    source: str,
    model: type[BaseModel] | None = None,
    overrides: Mapping[tuple[str, ...], str] | None = None,
) -> str:
    """One line per problem, each naming the field path; an unknown key also names the keys
    allowed there (and the likeliest one meant) when ``model`` is given. A field set (or
    reached) through an environment override names that variable as its source."""
    lines = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden" and model is not None:
            msg = _unknown_key(model, err["loc"])
        variable = _override_of(err["loc"], overrides or {})
        said = f"{variable} (environment, overriding {source})" if variable else source
        lines.append(f"{said}: {where}: {msg}")
    return "\n".join(lines)


def _override_of(loc: tuple[int | str, ...], overrides: Mapping[tuple[str, ...], str]) -> str:
    """The variable whose override set ``loc`` or a section holding it ('' for none)."""
    path = tuple(str(p) for p in loc)
    for length in range(len(path), 0, -1):
        if (variable := overrides.get(path[:length])) is not None:
            return variable
    return ""


def _unknown_key(model: type[BaseModel], loc: tuple[int | str, ...]) -> str:
    allowed = _keys_at(model, loc[:-1])
    if not allowed:
        return "unknown key"
    guess = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
    meant = f"did you mean {guess[0]!r}? " if guess else ""
    return f"unknown key; {meant}allowed here: {', '.join(allowed)}"


def _keys_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The field names of the model found at ``loc`` (through nested models, optional
    models and mappings of models), or [] when ``loc`` leads elsewhere."""
    current: Any = model
    parts = list(loc)
    while parts:
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(str(parts.pop(0)))
        if field is None:
            return []
        current = _unwrap(field.annotation)
        if typing.get_origin(current) in (dict, Mapping) and parts:
            parts.pop(0)  # the mapping's key
            current = _unwrap(typing.get_args(current)[-1])
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _unwrap(annotation: Any) -> Any:
    """``X | None`` -> ``X``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return args[0]
    return annotation


SECRET_KEYS = ("password", "ssl_key_password")


def _secrets_in_clear(node: Any, where: tuple[str, ...] = ()) -> list[str]:
    """The dotted paths of secrets written in the file itself, in a section that does not say
    ``password_in_config: true`` (environment overrides are applied later and never count)."""
    if not isinstance(node, dict):
        return []
    found = [
        ".".join((*where, key))
        for key in SECRET_KEYS
        if node.get(key) not in (None, "") and node.get("password_in_config") is not True
    ]
    for key, child in node.items():
        found += _secrets_in_clear(child, (*where, str(key)))
    return found


def load_config(
    model: type[M],
    path: str | Path | None,
    *,
    env_prefix: str,
    env: Mapping[str, str] | None = None,
) -> M:
    """Read ``path`` (YAML mapping; None means defaults only), apply overrides, validate."""
    data: dict[str, Any] = {}
    source = "defaults"
    if path is not None:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(
                f"{path}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})"
            ) from exc
        try:
            loaded = yaml_strict.load(text)
        except yaml_strict.DuplicateKeyError as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(
                f"{path}: the top level must be a mapping, not {type(loaded).__name__}"
            )
        data = loaded
        clear = _secrets_in_clear(data)
        if clear:
            raise ConfigError(
                f"{path}: {', '.join(clear)}: a password in clear in a config file; use a "
                "password_file or the environment, or set password_in_config: true beside it"
            )
    overrides = _apply_env(data, env_prefix, os.environ if env is None else env)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, source, model, overrides)) from exc


def load_model_file(model: type[M], path: Path, what: str) -> M:
    """A small YAML file of one model (a web config, the health check's credentials), or a
    ConfigError naming the file, ``what`` it is, and the field: unreadable, not UTF-8, not
    YAML (a key given twice too), not a mapping, or not valid."""
    try:
        raw = yaml_strict.load(path.read_text(encoding="utf-8")) or {}
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the {what}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: the {what} is not UTF-8 text") from exc
    except yaml_strict.DuplicateKeyError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the {what} must be a mapping")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ConfigError(describe_validation_error(exc, str(path), model)) from exc
