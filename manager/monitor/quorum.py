"""The KRaft controller quorum, read each cycle (DescribeMetadataQuorum): its leader, and each
voter's lag behind the leader's high watermark and the age of its last fetch.

On a client of its own with a short timeout. A KRaft broker forwards the request to the
quorum's leader; without one it cannot answer and the request times out, which must not hold
the cycle for the main client's full timeout. Two reads timing out in a row (the second on a
fresh client, steered off the broker the first waited on: kmedic.kafka_admin.steer_requests,
so one hung broker, or one cut off from the controllers, cannot fake it) mean *leaderless*.
Any other failure (a Kafka without the API, an ACL that refuses it, the cluster unreachable)
means *unknown*: logged, and held against no plan.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from kmedic.forwarders import Forwarders
from kmedic.kafka_admin import connect_admin, steer_requests
from kmedic.kafka_client import Cluster
from kmedic.logging import get_logger
from manager.model.snapshot import Quorum, QuorumVoter

log = get_logger(__name__)

TIMEOUT_MS = 2000
TIMEOUTS = ("RequestTimedOutError", "KafkaTimeoutError")
LEADERLESS_ERRORS = ("NotLeaderOrFollowerError", "LeaderNotAvailableError", "NotControllerError")


def parse_quorum(doc: Mapping[str, Any], now_ms: int) -> Quorum:
    """kafka-python's ``describe_metadata_quorum()`` answer, as the snapshot keeps it."""
    part = doc["topics"][0]["partitions"][0]
    if part.get("error"):
        return Quorum(state="leaderless", error=str(part["error"]))
    leader, high = int(part["leader_id"]), int(part["high_watermark"])
    voters = []
    for v in part.get("current_voters") or ():
        end, fetched = int(v["log_end_offset"]), int(v["last_fetch_timestamp"])
        voters.append(
            QuorumVoter(
                id=int(v["replica_id"]),
                lag=max(high - end, 0) if end >= 0 and high >= 0 else None,
                last_fetch_age_ms=max(now_ms - fetched, 0) if fetched >= 0 else None,
            )
        )
    if leader < 0:
        return Quorum(state="leaderless", voters=tuple(voters), error="no leader elected")
    return Quorum(state="led", leader=leader, voters=tuple(voters))


class QuorumReader:
    def __init__(
        self,
        bootstrap: Cluster,
        timeout_ms: int = TIMEOUT_MS,
        *,
        forwarders: Forwarders | None = None,
    ) -> None:
        self._bootstrap = bootstrap
        self._timeout_ms = timeout_ms
        self._admin: Any = None
        # Kept across clients: the second read's fresh client picked its broker at random,
        # the cut one again now and then, and a broker cut off from the controllers made the
        # quorum look leaderless (a refusal: CI, test_network_faults).
        self._forwarders = forwarders if forwarders is not None else Forwarders()

    def read(self, now_ms: int) -> Quorum:
        errors: list[str] = []
        for _ in range(2):
            try:
                return parse_quorum(self._client().describe_metadata_quorum(), now_ms)
            except Exception as exc:  # kafka-python raises several unrelated types
                name = type(exc).__name__
                errors.append(f"{name}: {exc}" if str(exc) else name)
                self.close()
                if name not in TIMEOUTS and name not in LEADERLESS_ERRORS:
                    log.warning("quorum_unread", error=errors[-1])
                    return Quorum(state="unknown", error=errors[-1])
                if name in LEADERLESS_ERRORS:
                    break
        said = f"no quorum leader answered ({errors[-1]})"
        return Quorum(state="leaderless", error=said)

    def _client(self) -> Any:
        if self._admin is None:
            self._admin = connect_admin(
                self._bootstrap, client_id="kmedic-manager-quorum", timeout_ms=self._timeout_ms
            )
            steer_requests(self._admin, self._forwarders)
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
            self._admin = None
