"""A fake Kafka Admin port for the whole-cycle benchmark: it answers, in Kafka's own wire
protocol (kafka-python's message classes), the requests one manager cycle sends -
ApiVersions, Metadata, DescribeCluster, ListPartitionReassignments, DescribeConfigs and
DescribeQuorum - and the one an agent adds, DescribeLogDirs of its broker - with the fleet of
bench/fleet.py. So the manager's and the agent's real client, parsing and cycle code run against
fleet-size answers and only the network is simulated. With ``--counts FILE`` the number of
requests served, by API name, is written to FILE after each request.

Each answer is encoded once per version asked, then served with the request's correlation id,
so the server costs the benchmark nothing after the first cycle. With ``--fresh`` the Metadata
answer is built for each request instead, as a broker builds it: from the cluster as it is at
that request (the leader epochs of the partitions being moved and of a rotating few hundred
others change from one request to the next), encoded by kafka-python's classes -
slower than a broker's Java, so the round-trip the manager waits on is, if anything, long. It
runs as its own process: ``python bench/fake_admin_port.py --scale 0.1 --port N`` prints
``ready`` when it listens.
"""

from __future__ import annotations

import argparse
import json
import socket
import socketserver
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import numpy.typing as npt
from fleet import Fleet, fleet
from kafka.protocol.admin import (
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsResponse,
    DescribeQuorumResponse,
    ListPartitionReassignmentsResponse,
)
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.metadata.api_versions import ApiVersionsResponse
from metadata_build import FIRST_VERSION, BrokerEntry, PartitionColumns, metadata_body

BROKER = 4  # DescribeConfigs' resource type of a broker
# A broker at Kafka's defaults answers with these (the replication settings kmedic reads).
BROKER_DEFAULTS = (
    ("replication.quota.window.num", "11"),
    ("replication.quota.window.size.seconds", "1"),
    ("replica.fetch.backoff.ms", "1000"),
    ("replica.fetch.wait.max.ms", "500"),
)
TOPIC_CONFIGS = (("min.insync.replicas", "2"),)
HOST = "127.0.0.1"
CONTROLLER = 9000
RESPONSES: dict[int, Any] = {
    18: ApiVersionsResponse,
    3: MetadataResponse,
    60: DescribeClusterResponse,
    46: ListPartitionReassignmentsResponse,
    32: DescribeConfigsResponse,
    55: DescribeQuorumResponse,
    35: DescribeLogDirsResponse,
}
LOG_DIR = "/data/kafka"


class Answers:
    """Every response the fleet gives, built once per (api, version)."""

    def __init__(self, f: Fleet, port: int, *, fresh: bool = False) -> None:
        self.fleet, self.port = f, port
        self.fresh = fresh
        self.timings: Path | None = None  # fresh: when each whole answer was built, how long
        self._encoded: dict[tuple[int, int], bytes] = {}
        self._lock = threading.Lock()
        self._columns: PartitionColumns | None = None  # fresh: every partition's entry
        self._epochs = np.zeros(0, dtype=np.int32)
        at = {(p.topic, p.number): row for row, p in enumerate(f.parts)}
        self._moving_rows = np.array([at[p.topic, p.number] for p in f.reassigning], dtype=np.intp)
        self._served = 0  # fresh: Metadata answers built so far

    def fresh_metadata(self, version: int, asked: frozenset[str] | None) -> bytes:
        """The Metadata answer's body of this request (``--fresh``): the partitions' columns
        kept between requests as a broker's metadata image keeps them, the leader epochs that
        changed since the last request updated, every entry encoded anew
        (bench/metadata_build.py; versions before 9 by kafka-python's classes)."""
        with self._lock:
            if self._columns is None:
                self._columns = partition_columns(self.fleet)
                self._epochs = np.ones(len(self._columns), dtype=np.int32)
            self._served += 1
            served = self._served
            self._epochs[self._moving_rows] = served + 1
            # A few hundred partitions get a new leader epoch, a different few each time.
            start = (served * 307) % max(1, len(self._epochs))
            self._epochs[start : start + 300] = served + 1
            epochs = self._epochs.copy()
        if version < FIRST_VERSION:
            return bytes(self.metadata(asked).encode(version=version))
        f = self.fleet
        brokers = [BrokerEntry(b, HOST, self.port, f.rack[b]) for b in f.live]
        return metadata_body(version, brokers, "bench", f.live[0], self._columns, epochs, asked)

    def _response(self, topics: dict[str, list[Any]]) -> Any:
        """The Metadata answer of these topics' partition entries."""
        topic_cls = MetadataResponse.MetadataResponseTopic
        broker_cls = MetadataResponse.MetadataResponseBroker
        f = self.fleet
        return MetadataResponse(
            throttle_time_ms=0,
            brokers=[
                broker_cls(node_id=b, host=HOST, port=self.port, rack=f.rack[b]) for b in f.live
            ],
            cluster_id="bench",
            controller_id=f.live[0],
            topics=[
                topic_cls(error_code=0, name=name, is_internal=False, partitions=parts)
                for name, parts in topics.items()
            ],
        )

    def body(self, api: int, version: int, request: bytes) -> Any:
        f = self.fleet
        if api == 18:
            keys = [
                ApiVersionsResponse.ApiVersion(
                    api_key=k, min_version=cls.min_version, max_version=cls.max_version
                )
                for k, cls in RESPONSES.items()
            ]
            return ApiVersionsResponse(error_code=0, api_keys=keys, throttle_time_ms=0)
        if api == 3:
            return self.metadata(_asked_topics(version, request))
        if api == 60:
            broker = DescribeClusterResponse.DescribeClusterBroker
            return DescribeClusterResponse(
                throttle_time_ms=0,
                error_code=0,
                error_message=None,
                endpoint_type=1,
                cluster_id="bench",
                controller_id=f.live[0],
                brokers=[
                    broker(broker_id=b, host=HOST, port=self.port, rack=f.rack[b], is_fenced=False)
                    for b in f.live
                ],
            )
        if api == 46:
            return self._reassignments()
        if api == 32:
            return self._configs(version, request)
        if api == 35:
            return self._log_dirs()
        return self._quorum()

    def metadata(self, asked: frozenset[str] | None) -> Any:
        """Every topic's partitions (``asked`` None), or the asked topics' only, as Kafka
        answers (none asked: brokers and controller only)."""
        f = self.fleet
        topic_cls = MetadataResponse.MetadataResponseTopic
        part_cls = topic_cls.MetadataResponsePartition
        topics: dict[str, list[Any]] = {}
        for p in f.parts:
            if asked is not None and p.topic not in asked:
                continue
            topics.setdefault(p.topic, []).append(
                part_cls(
                    error_code=0,
                    partition_index=p.number,
                    leader_id=p.leader,
                    leader_epoch=1,
                    replica_nodes=list(p.replicas),
                    isr_nodes=list(p.isr),
                    offline_replicas=[],
                )
            )
        return self._response(topics)

    def _log_dirs(self) -> Any:
        """The log directory of the broker asked: a connection serves one broker id (the
        agent's), so the answer is the first live broker's - every partition it holds."""
        f = self.fleet
        broker = f.live[0]
        result_cls = DescribeLogDirsResponse.DescribeLogDirsResult
        topic_cls = result_cls.DescribeLogDirsTopic
        part_cls = topic_cls.DescribeLogDirsPartition
        topics: dict[str, list[Any]] = {}
        for p in f.parts:
            if broker in p.replicas:
                topics.setdefault(p.topic, []).append(
                    part_cls(
                        partition_index=p.number,
                        partition_size=p.size,
                        offset_lag=0,
                        is_future_key=False,
                    )
                )
        return DescribeLogDirsResponse(
            throttle_time_ms=0,
            error_code=0,
            results=[
                result_cls(
                    error_code=0,
                    log_dir=LOG_DIR,
                    topics=[topic_cls(name=n, partitions=ps) for n, ps in topics.items()],
                    total_bytes=10**13,
                    usable_bytes=4 * 10**12,
                    is_cordoned=False,
                )
            ],
        )

    def _reassignments(self) -> Any:
        f = self.fleet
        topic_cls = ListPartitionReassignmentsResponse.OngoingTopicReassignment
        part_cls = topic_cls.OngoingPartitionReassignment
        topics: dict[str, list[Any]] = {}
        for p in f.reassigning:
            row = [b for b in f.live if f.rack[b] == f.rack[p.replicas[0]] and b not in p.replicas]
            adding = row[0]
            topics.setdefault(p.topic, []).append(
                part_cls(
                    partition_index=p.number,
                    replicas=[*p.replicas, adding],
                    adding_replicas=[adding],
                    removing_replicas=[p.replicas[0]],
                )
            )
        return ListPartitionReassignmentsResponse(
            throttle_time_ms=0,
            error_code=0,
            error_message=None,
            topics=[topic_cls(name=n, partitions=ps) for n, ps in topics.items()],
        )

    def _configs(self, version: int, request: bytes) -> Any:
        asked = DescribeConfigsRequest.decode(request, version=version, header=True)
        result_cls = DescribeConfigsResponse.DescribeConfigsResult
        config_cls = result_cls.DescribeConfigsResourceResult
        return DescribeConfigsResponse(
            throttle_time_ms=0,
            results=[
                result_cls(
                    error_code=0,
                    error_message=None,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                    configs=[
                        config_cls(
                            name=name,
                            value=value,
                            read_only=False,
                            config_source=1,
                            is_sensitive=False,
                            synonyms=[],
                            config_type=3,
                            documentation=None,
                        )
                        for name, value in (
                            BROKER_DEFAULTS if r.resource_type == BROKER else TOPIC_CONFIGS
                        )
                    ],
                )
                for r in asked.resources
            ],
        )

    def _quorum(self) -> Any:
        topic_cls = DescribeQuorumResponse.TopicData
        part_cls = topic_cls.PartitionData
        state_cls = part_cls.ReplicaState
        voter = state_cls(
            replica_id=CONTROLLER,
            log_end_offset=1000,
            last_fetch_timestamp=-1,
            last_caught_up_timestamp=-1,
        )
        partition = part_cls(
            partition_index=0,
            error_code=0,
            error_message=None,
            leader_id=CONTROLLER,
            leader_epoch=1,
            high_watermark=1000,
            current_voters=[voter],
            observers=[],
        )
        return DescribeQuorumResponse(
            error_code=0,
            error_message=None,
            topics=[topic_cls(topic_name="__cluster_metadata", partitions=[partition])],
            nodes=[],
        )

    def framed(self, api: int, version: int, correlation_id: int, request: bytes) -> bytes:
        """The framed response, its correlation id patched into the cached encoding."""
        key: tuple[Any, ...] = (api, version)
        if api == 3:
            key = (api, version, _asked_topics(version, request))
        if api == 32:  # depends on the topics asked
            return self._encode(self.body(api, version, request), version, correlation_id)
        if api == 3 and self.fresh:
            started = time.perf_counter()
            asked = _asked_topics(version, request)
            answer = _framed(self.fresh_metadata(version, asked), version >= 9, correlation_id)
            if self.timings is not None and asked is None:  # the whole cluster's answer
                with self.timings.open("a") as out:
                    out.write(f"{time.time():.3f} {time.perf_counter() - started:.3f}\n")
            return answer
        with self._lock:
            if key not in self._encoded:
                self._encoded[key] = self._encode(self.body(api, version, request), version, 0)
        cached = self._encoded[key]
        return cached[:4] + struct.pack(">i", correlation_id) + cached[8:]

    @staticmethod
    def _encode(body: Any, version: int, correlation_id: int) -> bytes:
        """Size, response header (v1, with its empty tagged fields, for a flexible version;
        ApiVersions always v0), body."""
        encoded = bytes(body.encode(version=version))
        flexible = type(body).flexible_version_q(version) and type(body).API_KEY != 18
        return _framed(encoded, flexible, correlation_id)


def _framed(encoded: bytes, flexible: bool, correlation_id: int) -> bytes:
    header = struct.pack(">i", correlation_id) + (b"\x00" if flexible else b"")
    return struct.pack(">i", len(header) + len(encoded)) + header + encoded


def partition_columns(f: Fleet) -> PartitionColumns:
    """The fleet's partitions as the builder's columns (its parts are grouped by topic)."""
    names: list[str] = []
    starts: list[int] = []
    for row, p in enumerate(f.parts):
        if not names or names[-1] != p.topic:
            names.append(p.topic)
            starts.append(row)
    width = max((len(p.replicas) for p in f.parts), default=0)

    def padded(lists: list[tuple[int, ...]]) -> npt.NDArray[np.int32]:
        return np.array([[*ids, *[-1] * (width - len(ids))] for ids in lists], dtype=np.int32)

    return PartitionColumns(
        names,
        np.array(starts, dtype=np.int64),
        np.array([p.number for p in f.parts], dtype=np.int32),
        np.array([p.leader for p in f.parts], dtype=np.int32),
        padded([p.replicas for p in f.parts]),
        padded([p.isr for p in f.parts]),
    )


def _asked_topics(version: int, request: bytes) -> frozenset[str] | None:
    """The topics a Metadata request names (None: every topic)."""
    topics = MetadataRequest.decode(request, version=version, header=True).topics
    return None if topics is None else frozenset(str(t.name) for t in topics)


def serve(
    scale: float,
    port: int,
    brokers: int | None,
    counts: Path | None,
    *,
    quiet: bool = False,
    fresh: bool = False,
    moving: bool = True,
    timings: Path | None = None,
) -> None:
    f = fleet(scale, broker_count=brokers, quiet=quiet, moving=moving)
    answers = Answers(f, port, fresh=fresh)
    answers.timings = timings
    served: dict[str, int] = {}
    counted = threading.Lock()

    def count(api: int) -> None:
        if counts is None:
            return
        with counted:
            name = (
                RESPONSES[api].__name__.removesuffix("Response") if api in RESPONSES else str(api)
            )
            served[name] = served.get(name, 0) + 1
            counts.write_text(json.dumps(served))

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            conn: socket.socket = self.request
            while True:
                head = _read(conn, 4)
                if head is None:
                    return
                request = _read(conn, struct.unpack(">i", head)[0])
                if request is None:
                    return
                api, version, correlation_id = struct.unpack(">hhi", request[:8])
                count(api)
                conn.sendall(answers.framed(api, version, correlation_id, request))

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True
        allow_reuse_address = True

    with Server((HOST, port), Handler) as server:
        print("ready", flush=True)
        server.serve_forever()


def _read(conn: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--brokers", type=int, help="brokers instead of the scale's")
    parser.add_argument("--counts", type=Path, help="write the requests served here")
    parser.add_argument("--quiet", action="store_true", help="no broker dead, nothing moving")
    parser.add_argument(
        "--fresh", action="store_true", help="build each Metadata answer for its request"
    )
    parser.add_argument(
        "--no-moves", action="store_true", help="the broker dead, no reassignment in flight"
    )
    parser.add_argument(
        "--timings", type=Path, help="with --fresh: a line per whole-cluster answer built"
    )
    args = parser.parse_args()
    serve(
        args.scale,
        args.port,
        args.brokers,
        args.counts,
        quiet=args.quiet,
        fresh=args.fresh,
        moving=not args.no_moves,
        timings=args.timings,
    )


if __name__ == "__main__":
    main()
