"""Failure domains, broker, isolation and anti-affinity groups, and maintenance, in the shape
of Pulsar's admin API (``/admin/v2/clusters/{cluster}/failureDomains/{domain}``): a collection
per kind under the cluster, ``POST`` to create or update one, ``DELETE`` to remove it. Stored
where `kmedic domains|groups|maintenance` store them, with the same checks; each write audited
with the caller's name."""

# No ``from __future__ import annotations`` here: each collection's routes are built in a loop,
# and FastAPI reads their parameter types (a body model per kind) from the live annotations.

import time
from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel, ConfigDict, Field

from kmedic.errors import KmedicError
from manager.analyzer.request_check import ClusterFacts, unknown_brokers
from manager.api.access import Caller, Reader, Writer
from manager.api.problems import Problem
from manager.api.view import ManagerView
from manager.coordination.placement_store import ZkConfigStore
from manager.model.placement_config import Kind, parse_record


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BrokersBody(_Body):
    brokers: list[int] = Field(description="the broker ids")


class IsolationGroupBody(_Body):
    topics: list[str]
    primary: str = Field(description="the broker group the topics live on")
    secondary: str | None = Field(
        default=None, description="the broker group used when the primary has no room"
    )


class TopicsBody(_Body):
    topics: list[str]


class MaintenanceStart(_Body):
    reason: str = Field(min_length=1, description="why (shown to on-call and in the audit log)")


# The collection's name in the path, the record kind it holds, and the body a write sends.
COLLECTIONS: dict[str, tuple[Kind, type[_Body]]] = {
    "failureDomains": ("domain", BrokersBody),
    "brokerGroups": ("broker-group", BrokersBody),
    "isolationGroups": ("isolation-group", IsolationGroupBody),
    "antiAffinityGroups": ("anti-affinity-group", TopicsBody),
}


class _Placement:
    """The routes' shared steps: the cluster in the path checked, writes audited."""

    def __init__(self, view: ManagerView) -> None:
        self.view = view

    def store(self, cluster: str, client: Any) -> ZkConfigStore:
        if cluster != self.view.cluster:
            raise Problem(404, f"this manager runs cluster {self.view.cluster!r}, not {cluster!r}")
        return ZkConfigStore(client, self.view.cluster, self.view.zk_root)

    def audited(self, who: Caller, summary: str, **details: Any) -> None:
        self.view.audit_write(who.by, who.user, summary, **details)


def router(view: ManagerView) -> APIRouter:
    api = APIRouter(prefix="/api/v1/clusters/{cluster}", tags=["placement"])
    steps = _Placement(view)
    for collection, (kind, body) in COLLECTIONS.items():
        _collection(api, steps, collection, kind, body)

    @api.get("/maintenance", summary="the failure domains in maintenance")
    def maintenance(cluster: str, _: Reader) -> dict[str, Any]:
        with view.zookeeper() as client:
            found = steps.store(cluster, client).load()
        return {d: m.model_dump(mode="json") for d, m in sorted(found.maintenance.items())}

    @api.put("/failureDomains/{domain}/maintenance", summary="put a failure domain in maintenance")
    def start_maintenance(
        cluster: str, domain: str, body: MaintenanceStart, who: Writer
    ) -> dict[str, Any]:
        with view.zookeeper() as client:
            zk = steps.store(cluster, client)
            if domain not in zk.load().domains:
                raise Problem(404, f"no failure domain {domain!r} in cluster {cluster!r}")
            cfg = zk.start_maintenance(domain, body.reason, int(time.time() * 1000))
        steps.audited(who, f"domain {domain} in maintenance: {body.reason}", domain=domain)
        return cfg.maintenance[domain].model_dump(mode="json")

    @api.delete(
        "/failureDomains/{domain}/maintenance",
        status_code=204,
        summary="take a failure domain out of maintenance",
    )
    def end_maintenance(cluster: str, domain: str, who: Writer) -> Response:
        with view.zookeeper() as client:
            zk = steps.store(cluster, client)
            if domain not in zk.load().maintenance:
                raise Problem(404, f"failure domain {domain!r} is not in maintenance")
            zk.end_maintenance(domain)
        steps.audited(who, f"domain {domain} out of maintenance", domain=domain)
        return Response(status_code=204)

    return api


def _collection(
    api: APIRouter, steps: _Placement, collection: str, kind: Kind, body_model: type[_Body]
) -> None:
    what = kind.replace("-", " ")
    zookeeper = steps.view.zookeeper

    def listing(cluster: str, _: Reader) -> dict[str, Any]:
        with zookeeper() as client:
            items = steps.store(cluster, client).load().items(kind)
        return {n: _fields(items[n]) for n in sorted(items)}

    def one(cluster: str, name: str, _: Reader) -> dict[str, Any]:
        with zookeeper() as client:
            items = steps.store(cluster, client).load().items(kind)
        if name not in items:
            raise Problem(404, f"no {what} {name!r} in cluster {cluster!r}")
        return _fields(items[name])

    def put(
        cluster: str,
        name: str,
        body: body_model,  # type: ignore[valid-type]
        response: Response,
        who: Writer,
    ) -> dict[str, Any]:
        fields = body.model_dump(exclude_none=True)  # type: ignore[attr-defined]
        try:
            record = parse_record(kind, {**fields, "name": name}, f"{what} {name!r}")
        except KmedicError as exc:
            raise Problem(422, str(exc)) from exc
        snap = steps.view.snapshot()
        # A typo'd broker id was stored and silently matched nothing (issue 72.2); the rule
        # the CLI checks by (a dead broker still holding replicas is one the cluster has).
        unknown = (
            None
            if snap is None
            else unknown_brokers(fields.get("brokers", ()), ClusterFacts.of(snap))
        )
        if unknown is not None:
            raise Problem(422, f"{what} {name!r} not stored: {unknown}")
        with zookeeper() as client:
            zk = steps.store(cluster, client)
            exists = name in zk.load().items(kind)
            zk.put(record, create=not exists)
        response.status_code = 200 if exists else 201
        verb = "updated" if exists else "created"
        steps.audited(who, f"{verb} {what} {name}", record=record.model_dump(mode="json"))
        return _fields(record)

    def delete(cluster: str, name: str, who: Writer) -> Response:
        with zookeeper() as client:
            zk = steps.store(cluster, client)
            if name not in zk.load().items(kind):
                raise Problem(404, f"no {what} {name!r} in cluster {cluster!r}")
            zk.delete(kind, name)
        steps.audited(who, f"deleted {what} {name}", kind=kind, name=name)
        return Response(status_code=204)

    path = f"/{collection}"
    api.add_api_route(path, listing, methods=["GET"], summary=f"every {what}")
    api.add_api_route(f"{path}/{{name}}", one, methods=["GET"], summary=f"one {what}")
    api.add_api_route(
        f"{path}/{{name}}",
        put,
        methods=["POST"],
        status_code=201,
        summary=f"create (201) or update (200) a {what}",
    )
    api.add_api_route(
        f"{path}/{{name}}", delete, methods=["DELETE"], status_code=204, summary=f"delete a {what}"
    )


def _fields(record: BaseModel) -> dict[str, Any]:
    """A record without its name (the name is the path's)."""
    return {k: v for k, v in record.model_dump(mode="json").items() if k != "name"}
