"""The placement configuration as data: failure domains, broker groups, isolation groups,
anti-affinity groups and maintenance, and the rules a valid configuration keeps (pure).

manager.coordination.placement_store keeps it in ZooKeeper; the monitor puts it into every
snapshot; ``kmedic domains|groups|maintenance`` edit it.
"""

from __future__ import annotations

import re
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kmedic.config import describe_validation_error
from kmedic.errors import KmedicError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}$")
TOPIC_RE = re.compile(r"^[A-Za-z0-9._\-]{1,249}$")


def _check_name(value: str) -> str:
    if not NAME_RE.match(value):
        raise ValueError(
            f"invalid name {value!r}: use 1-63 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


def _check_brokers(value: tuple[int, ...]) -> tuple[int, ...]:
    if not value:
        raise ValueError("needs at least one broker id")
    if any(b < 0 for b in value):
        raise ValueError(f"broker ids must be >= 0, got {list(value)}")
    if len(set(value)) != len(value):
        raise ValueError(f"broker ids listed twice: {list(value)}")
    return tuple(sorted(value))


def _check_topics(value: tuple[str, ...]) -> tuple[str, ...]:
    if not value:
        raise ValueError("needs at least one topic")
    bad = [t for t in value if not TOPIC_RE.match(t) or t in (".", "..")]
    if bad:
        raise ValueError(f"invalid topic names {bad}: Kafka allows letters, digits, '.', '_', '-'")
    if len(set(value)) != len(value):
        raise ValueError(f"topics listed twice: {list(value)}")
    return tuple(sorted(value))


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str

    _name = field_validator("name")(_check_name)


class Domain(_Record):
    """A failure domain: brokers that can fail together. A broker is in at most one domain."""

    brokers: tuple[int, ...]
    _brokers = field_validator("brokers")(_check_brokers)


class BrokerGroup(_Record):
    """A named set of brokers that isolation groups bind topics to."""

    brokers: tuple[int, ...]
    _brokers = field_validator("brokers")(_check_brokers)


class IsolationGroup(_Record):
    """Topics whose replicas may live only on the primary broker group (then the secondary)."""

    topics: tuple[str, ...]
    primary: str
    secondary: str | None = None
    _topics = field_validator("topics")(_check_topics)


class AntiAffinityGroup(_Record):
    """Topics spread across failure domains, and evenly across brokers within a domain."""

    topics: tuple[str, ...]
    _topics = field_validator("topics")(_check_topics)


class Maintenance(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    domain: str
    reason: str = Field(min_length=1)
    since_ms: int = Field(ge=0)


Record: TypeAlias = Domain | BrokerGroup | IsolationGroup | AntiAffinityGroup
Kind = Literal["domain", "broker-group", "isolation-group", "anti-affinity-group"]

KIND_DIRS: dict[Kind, str] = {
    "domain": "domains",
    "broker-group": "broker-groups",
    "isolation-group": "isolation-groups",
    "anti-affinity-group": "anti-affinity-groups",
}
KIND_MODELS: dict[Kind, type[Record]] = {
    "domain": Domain,
    "broker-group": BrokerGroup,
    "isolation-group": IsolationGroup,
    "anti-affinity-group": AntiAffinityGroup,
}


class PlacementConfig(BaseModel):
    """Everything stored for one cluster, read at one consistent version."""

    model_config = ConfigDict(frozen=True)
    version: int = -1
    domains: dict[str, Domain] = {}
    broker_groups: dict[str, BrokerGroup] = {}
    isolation_groups: dict[str, IsolationGroup] = {}
    anti_affinity_groups: dict[str, AntiAffinityGroup] = {}
    maintenance: dict[str, Maintenance] = {}

    def items(self, kind: Kind) -> dict[str, Any]:
        tables: dict[Kind, dict[str, Any]] = {
            "domain": self.domains,
            "broker-group": self.broker_groups,
            "isolation-group": self.isolation_groups,
            "anti-affinity-group": self.anti_affinity_groups,
        }
        return tables[kind]

    def with_item(self, kind: Kind, name: str, record: Record | None) -> PlacementConfig:
        table = dict(self.items(kind))
        if record is None:
            table.pop(name, None)
        else:
            table[name] = record
        field = KIND_DIRS[kind].replace("-", "_")
        return self.model_copy(update={field: table})

    def with_maintenance(self, domain: str, entry: Maintenance | None) -> PlacementConfig:
        table = dict(self.maintenance)
        if entry is None:
            table.pop(domain, None)
        else:
            table[domain] = entry
        return self.model_copy(update={"maintenance": table})


def _one_owner(owned: dict[str, tuple[Any, ...]], what: str, owners: str) -> list[str]:
    seen: dict[Any, str] = {}
    out = []
    for owner in sorted(owned):
        for item in owned[owner]:
            if item in seen:
                out.append(f"{what} {item} is in {owners} {seen[item]!r} and {owner!r}")
            else:
                seen[item] = owner
    return out


def problems(cfg: PlacementConfig) -> list[str]:
    """Every rule the stored configuration breaks, one sentence each (empty: valid)."""
    out = _one_owner({n: d.brokers for n, d in cfg.domains.items()}, "broker", "domain")
    out += _one_owner(
        {n: g.topics for n, g in cfg.isolation_groups.items()}, "topic", "isolation group"
    )
    out += _one_owner(
        {n: g.topics for n, g in cfg.anti_affinity_groups.items()}, "topic", "anti-affinity group"
    )
    for name, group in sorted(cfg.isolation_groups.items()):
        for role, ref in (("primary", group.primary), ("secondary", group.secondary)):
            if ref is not None and ref not in cfg.broker_groups:
                out.append(f"isolation group {name!r}: {role} broker group {ref!r} does not exist")
        if group.secondary is not None and group.secondary == group.primary:
            out.append(f"isolation group {name!r}: secondary group is the primary group")
    for domain in sorted(cfg.maintenance):
        if domain not in cfg.domains:
            out.append(f"maintenance names unknown domain {domain!r}")
    return out


def parse_record(kind: Kind, data: dict[str, Any], source: str) -> Record:
    try:
        return KIND_MODELS[kind].model_validate(data)
    except ValidationError as exc:
        raise KmedicError(describe_validation_error(exc, source, KIND_MODELS[kind])) from exc


def kind_of(record: Record) -> Kind:
    for kind, model in KIND_MODELS.items():
        if type(record) is model:
            return kind
    raise KmedicError(f"not a configuration record: {type(record).__name__}")
