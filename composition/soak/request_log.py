"""What the brokers saw each manager send, from Kafka's own request logger: the witness kmedic
does not control. A soak cluster (``ClusterSpec.request_log``) writes each node's requests from
kmedic's writers - client ids ``kmedic-executor-<instance>`` (reassignments, configs,
elections, unregistrations) and ``kmedic-audit-<instance>`` (the audit records) - to
``requests.log``, one line per completed request: the completion time in epoch ms, then
Kafka's ``Completed request:{json}``. The request reached the node ``totalTimeMs`` before it
completed; that is the moment judged.

A manager whose lease could have run out (its ZooKeeper link cut, its session left to expire)
must send no write from then on: ``lease_as_the_brokers_saw`` (composition.soak.invariants)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Requests that change the cluster or kmedic's topics.
WRITES = frozenset(
    {
        "PRODUCE",
        "ALTER_PARTITION_REASSIGNMENTS",
        "INCREMENTAL_ALTER_CONFIGS",
        "ALTER_CONFIGS",
        "ELECT_LEADERS",
        "CREATE_PARTITIONS",
        "CREATE_TOPICS",
        "DELETE_TOPICS",
        "UNREGISTER_BROKER",
    }
)
AUDIT_PREFIX = "kmedic-audit-"
_PREFIXES = ("kmedic-executor-", AUDIT_PREFIX)
_MARK = "Completed request:"


@dataclass(frozen=True)
class Seen:
    """One request of a manager's, as a node completed it."""

    node: str
    instance: str
    client_id: str
    api: str
    received_ms: int
    completed_ms: int
    connection: str

    @property
    def writes(self) -> bool:
        return self.api in WRITES

    @property
    def audit_record(self) -> bool:
        """A Produce of the manager's audit records (not a change to the cluster)."""
        return self.api == "PRODUCE" and self.client_id.startswith(AUDIT_PREFIX)

    def sentence(self) -> str:
        return f"{self.api} from {self.client_id} received by {self.node} at {self.received_ms}"


def instance_of(client_id: str) -> str | None:
    """The manager instance a client id names (None: not one of kmedic's writers)."""
    for prefix in _PREFIXES:
        if client_id.startswith(prefix) and len(client_id) > len(prefix):
            return client_id[len(prefix) :]
    return None


def parse_line(node: str, line: str) -> Seen | None:
    """One line of ``requests.log`` (None: not a completed request of kmedic's writers)."""
    stamp, _, rest = line.partition(" ")
    at = rest.find(_MARK)
    if not stamp.isdigit() or at < 0:
        return None
    try:
        desc = json.loads(rest[at + len(_MARK) :])
    except json.JSONDecodeError:
        return None
    header = desc.get("requestHeader") or {}
    client_id = str(header.get("clientId") or "")
    instance = instance_of(client_id)
    if instance is None:
        return None
    completed = int(stamp)
    total = float(desc.get("totalTimeMs") or 0.0)
    return Seen(
        node=node,
        instance=instance,
        client_id=client_id,
        api=str(header.get("requestApiKeyName") or header.get("requestApiKey")),
        received_ms=completed - int(total + 0.5),
        completed_ms=completed,
        connection=str(desc.get("connection") or ""),
    )


def read_requests(node_dirs: Iterable[Path]) -> list[Seen]:
    """Every node's requests from kmedic's writers, by the time they were received."""
    seen: list[Seen] = []
    for directory in node_dirs:
        path = directory / "requests.log"
        if not path.exists():
            continue
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                found = parse_line(directory.name, line.rstrip("\n"))
                if found is not None:
                    seen.append(found)
    return sorted(seen, key=lambda s: s.received_ms)
