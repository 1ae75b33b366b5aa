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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError, RolledBackError
from kazoo.handlers.threading import KazooTimeoutError
from pydantic import ValidationError

from kmedic.errors import KmedicError
from manager.coordination.acls import ZooKeeperAuth
from manager.coordination.session import zk_session
from manager.model.placement_config import (
    KIND_DIRS,
    Kind,
    Maintenance,
    PlacementConfig,
    Record,
    kind_of,
    parse_record,
    problems,
)


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
        cls,
        zk_connect: str,
        cluster: str,
        root: str = "/kmedic",
        timeout_s: float | None = None,
        auth: ZooKeeperAuth | None = None,
    ) -> Iterator[ZkConfigStore]:
        with zk_session(zk_connect, timeout_s, auth) as client:
            yield cls(client, cluster, root)

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
        items = self.load().items(kind)
        if name not in items:
            raise self._unknown(kind, name, items)
        return items[name]  # type: ignore[no-any-return]

    # -- writes ----------------------------------------------------------------------------

    def put(self, record: Record, *, create: bool) -> PlacementConfig:
        """Create (must not exist) or update (must exist) one item, after validation."""
        kind = kind_of(record)
        current = self.load()
        exists = record.name in current.items(kind)
        if create and exists:
            raise KmedicError(f"{kind} {record.name!r} already exists (use update)")
        if not create and not exists:
            raise self._unknown(kind, record.name, current.items(kind))
        proposed = current.with_item(kind, record.name, record)
        self._refuse_if_invalid(proposed, f"cannot {'create' if create else 'update'}")
        path = f"{self.base}/{KIND_DIRS[kind]}/{record.name}"
        data = json.dumps(record.model_dump(mode="json"), sort_keys=True).encode()
        self._commit(current.version, lambda tx: _create_or_set(tx, path, data, exists))
        return proposed

    def delete(self, kind: Kind, name: str) -> PlacementConfig:
        current = self.load()
        if name not in current.items(kind):
            raise self._unknown(kind, name, current.items(kind))
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
            inside = ", ".join(sorted(current.maintenance)) or "none"
            raise KmedicError(f"domain {domain!r} is not in maintenance (in maintenance: {inside})")
        path = f"{self.base}/maintenance/{domain}"
        self._commit(current.version, lambda tx: tx.delete(path))
        return current.with_maintenance(domain, None)

    # -- internals -------------------------------------------------------------------------

    def _unknown(self, kind: Kind, name: str, items: Mapping[str, object]) -> KmedicError:
        known = ", ".join(sorted(items)) or "none"
        return KmedicError(f"unknown {kind} {name!r} in cluster {self.cluster!r} (known: {known})")

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
