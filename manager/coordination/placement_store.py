"""Placement configuration kept in ZooKeeper: failure domains, broker groups, isolation groups,
anti-affinity groups and maintenance, as one JSON znode per item.

Layout under ``<root>/<cluster>/config``::

    domains/<name>               {"name", "brokers": [ids]}
    broker-groups/<name>         {"name", "brokers": [ids]}
    isolation-groups/<name>      {"name", "topics", "primary": group, "secondary": group|null}
    anti-affinity-groups/<name>  {"name", "topics": [...]}
    maintenance/<domain>         {"domain", "reason", "since_ms"}

Every write is one ZooKeeper transaction that also bumps the ``config`` znode's version with
compare-and-set. Two administrators editing at once therefore cannot both pass validation on a
stale view (a broker ending up in two domains): the slower one fails and is told to retry.
The rules checked before every write are in ``problems`` (pure, unit-tested).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypeAlias

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError, RolledBackError
from kazoo.handlers.threading import KazooTimeoutError
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
        raise KmedicError(describe_validation_error(exc, source)) from exc


class ZkConfigStore:
    """Reads and writes one cluster's placement configuration."""

    def __init__(self, client: KazooClient, cluster: str, root: str = "/kmedic") -> None:
        if not cluster or "/" in cluster:
            raise KmedicError(f"invalid cluster name {cluster!r}: must be non-empty without '/'")
        self._zk = client
        self.cluster = cluster
        self.base = f"{root.rstrip('/')}/{cluster}/config"

    @classmethod
    @contextmanager
    def connect(
        cls, zk_connect: str, cluster: str, root: str = "/kmedic", timeout_s: float = 10.0
    ) -> Iterator[ZkConfigStore]:
        client = KazooClient(hosts=zk_connect, timeout=timeout_s)
        try:
            client.start(timeout=timeout_s)
        except KazooTimeoutError as exc:
            client.close()
            raise KmedicError(
                f"cannot connect to ZooKeeper at {zk_connect} within {timeout_s:.0f}s"
            ) from exc
        try:
            yield cls(client, cluster, root)
        finally:
            client.stop()
            client.close()

    # -- reads -----------------------------------------------------------------------------

    def load(self) -> PlacementConfig:
        """Everything at one version (re-read if a writer committed meanwhile)."""
        for _ in range(10):
            try:
                version = self._root_version()
                tables: dict[str, Any] = {}
                for kind, sub in KIND_DIRS.items():
                    tables[sub.replace("-", "_")] = {
                        name: parse_record(kind, doc, path)
                        for name, doc, path in self._children(sub)
                    }
                tables["maintenance"] = {
                    name: Maintenance.model_validate(doc)
                    for name, doc, _ in self._children("maintenance")
                }
                if self._root_version() == version:
                    return PlacementConfig(version=version, **tables)
            except (KazooException, KazooTimeoutError) as exc:
                raise KmedicError(f"cannot read {self.base} from ZooKeeper: {exc!r}") from exc
            except ValidationError as exc:
                raise KmedicError(f"{self.base}: corrupt maintenance entry: {exc}") from exc
        raise KmedicError(f"{self.base} keeps changing; try again")

    def get(self, kind: Kind, name: str) -> Record:
        record = self.load().items(kind).get(name)
        if record is None:
            raise KmedicError(f"unknown {kind} {name!r} in cluster {self.cluster!r}")
        return record  # type: ignore[no-any-return]

    # -- writes ----------------------------------------------------------------------------

    def put(self, record: Record, *, create: bool) -> PlacementConfig:
        """Create (must not exist) or update (must exist) one item, after validation."""
        kind = _kind_of(record)
        current = self.load()
        exists = record.name in current.items(kind)
        if create and exists:
            raise KmedicError(f"{kind} {record.name!r} already exists (use update)")
        if not create and not exists:
            raise KmedicError(f"unknown {kind} {record.name!r} in cluster {self.cluster!r}")
        proposed = current.with_item(kind, record.name, record)
        self._refuse_if_invalid(proposed, f"cannot {'create' if create else 'update'}")
        path = f"{self.base}/{KIND_DIRS[kind]}/{record.name}"
        data = json.dumps(record.model_dump(mode="json"), sort_keys=True).encode()
        self._commit(current.version, lambda tx: _create_or_set(tx, path, data, exists))
        return proposed

    def delete(self, kind: Kind, name: str) -> PlacementConfig:
        current = self.load()
        if name not in current.items(kind):
            raise KmedicError(f"unknown {kind} {name!r} in cluster {self.cluster!r}")
        if kind == "domain" and name in current.maintenance:
            raise KmedicError(f"domain {name!r} is in maintenance; end the maintenance first")
        if kind == "broker-group":
            users = sorted(
                g.name
                for g in current.isolation_groups.values()
                if name in (g.primary, g.secondary)
            )
            if users:
                raise KmedicError(f"broker group {name!r} is used by isolation groups {users}")
        proposed = current.with_item(kind, name, None)
        path = f"{self.base}/{KIND_DIRS[kind]}/{name}"
        self._commit(current.version, lambda tx: tx.delete(path))
        return proposed

    def start_maintenance(self, domain: str, reason: str, now_ms: int) -> PlacementConfig:
        current = self.load()
        if domain not in current.domains:
            known = ", ".join(sorted(current.domains)) or "none"
            raise KmedicError(f"unknown domain {domain!r} (known domains: {known})")
        entry = Maintenance(domain=domain, reason=reason, since_ms=now_ms)
        path = f"{self.base}/maintenance/{domain}"
        data = json.dumps(entry.model_dump(mode="json"), sort_keys=True).encode()
        exists = domain in current.maintenance
        self._commit(current.version, lambda tx: _create_or_set(tx, path, data, exists))
        return current.with_maintenance(domain, entry)

    def end_maintenance(self, domain: str) -> PlacementConfig:
        current = self.load()
        if domain not in current.maintenance:
            raise KmedicError(f"domain {domain!r} is not in maintenance")
        path = f"{self.base}/maintenance/{domain}"
        self._commit(current.version, lambda tx: tx.delete(path))
        return current.with_maintenance(domain, None)

    # -- internals -------------------------------------------------------------------------

    def _refuse_if_invalid(self, proposed: PlacementConfig, what: str) -> None:
        found = problems(proposed)
        if found:
            raise KmedicError(f"{what}: " + "; ".join(found))

    def _root_version(self) -> int:
        try:
            return int(self._zk.get(self.base)[1].version)
        except NoNodeError:
            for sub in (*KIND_DIRS.values(), "maintenance"):
                self._zk.ensure_path(f"{self.base}/{sub}")
            return int(self._zk.get(self.base)[1].version)

    def _children(self, sub: str) -> list[tuple[str, dict[str, Any], str]]:
        parent = f"{self.base}/{sub}"
        try:
            names = sorted(self._zk.get_children(parent))
        except NoNodeError:
            return []
        out = []
        for name in names:
            path = f"{parent}/{name}"
            try:
                raw, _ = self._zk.get(path)
            except NoNodeError:
                continue
            try:
                doc = json.loads(raw.decode())
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise KmedicError(f"{path} does not hold JSON: {exc}") from exc
            if not isinstance(doc, dict):
                raise KmedicError(f"{path} holds {type(doc).__name__}, not a JSON object")
            out.append((name, doc, path))
        return out

    def _commit(self, version: int, add_op: Any) -> None:
        tx = self._zk.transaction()
        tx.set_data(self.base, b"", version=version)
        add_op(tx)
        try:
            results = tx.commit()
        except (KazooException, KazooTimeoutError) as exc:
            raise KmedicError(f"ZooKeeper write to {self.base} failed: {exc!r}") from exc
        failures = [r for r in results if isinstance(r, Exception)]
        if failures:
            if not isinstance(results[0], RolledBackError):
                raise KmedicError(
                    f"the configuration of cluster {self.cluster!r} changed while this command "
                    "ran; nothing was written, try again"
                )
            raise KmedicError(f"ZooKeeper refused the write: {type(failures[-1]).__name__}")


def _create_or_set(tx: Any, path: str, data: bytes, exists: bool) -> None:
    if exists:
        tx.set_data(path, data)
    else:
        tx.create(path, data)


def _kind_of(record: Record) -> Kind:
    for kind, model in KIND_MODELS.items():
        if type(record) is model:
            return kind
    raise KmedicError(f"not a configuration record: {type(record).__name__}")
