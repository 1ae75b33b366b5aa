"""Building the Kafka nodes' class-sharing archive (class_sharing.py): record the classes a
small cluster's Kafka nodes load, then dump them with ``java -Xshare:dump``. ``make bootstrap``
runs ``main`` once per JDK and Kafka release."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kmedic.errors import KmedicError
from kmedic.kafka_client import confluent_conf
from kmedic.localcluster import configs, process
from kmedic.localcluster.class_sharing import archive_path
from kmedic.localcluster.cluster import LocalCluster
from kmedic.localcluster.layout import Node
from kmedic.paths import jvm_jars


def build(group: str = configs.KAFKA_NEWEST) -> Path:
    """Record the classes a small cluster's Kafka nodes load, then dump them into the archive
    (replacing it atomically). Takes about a minute; raises KmedicError naming what failed."""
    target = archive_path(group)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kmedic-class-sharing-") as tmp:
        lists = _record_class_lists(group, Path(tmp))
        merged = Path(tmp) / "classes.lst"
        merged.write_text("".join(f"{line}\n" for line in _union(lists)))
        partial = target.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        done = subprocess.run(
            [
                "java",
                *process.LIGHT_JVM_OPTIONS,
                "-Xmx512m",
                "-Xshare:dump",
                f"-XX:SharedClassListFile={merged}",
                f"-XX:SharedArchiveFile={partial}",
                "-cp",
                os.pathsep.join(str(p) for p in jvm_jars(group)),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not partial.is_file():
            raise KmedicError(
                f"dumping the class-sharing archive of {group} failed (exit "
                f"{done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}"
            )
        partial.replace(target)
    return target


def _union(lists: list[Path]) -> list[str]:
    """Every class any node loaded, once, in first-loaded order. A line cut short by a node's
    exit (the list is written as classes load) is left out."""
    seen: dict[str, None] = {}
    for path in lists:
        text = path.read_text(errors="replace") if path.is_file() else ""
        lines = text.split("\n")
        complete = lines if text.endswith("\n") else lines[:-1]
        seen.update((line, None) for line in complete if line.strip())
    return list(seen)


def _record_class_lists(group: str, workdir: Path) -> list[Path]:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    lists: list[Path] = []

    class Recording(LocalCluster):
        """Each Kafka node writes the classes it loads to a list of its own."""

        def _launch(self, node: Node) -> None:
            if node.kind != "zookeeper" and not any(
                a.startswith("-XX:DumpLoadedClassList") for a in node.command
            ):
                listed = workdir / f"{node.kind}-{node.node_id}.lst"
                lists.append(listed)
                node.command = [node.command[0], f"-XX:DumpLoadedClassList={listed}"] + [
                    a for a in node.command[1:] if not a.startswith("-XX:SharedArchiveFile")
                ]
            super()._launch(node)

    spec = configs.ClusterSpec(brokers=2, racks=("/a", "/b"), kafka_jars=group)
    cluster = Recording.start(spec, workdir / "cluster")
    try:
        conf = confluent_conf(cluster.client, {"log_level": 0})
        admin = AdminClient(conf)
        admin.create_topics([NewTopic("class-sharing", 2, 2)])["class-sharing"].result(30)
        producer = Producer({**conf, "acks": "all"})
        for n in range(100):
            producer.produce("class-sharing", value=b"x" * 100, key=str(n).encode())
        if producer.flush(30) != 0:
            raise KmedicError("the class-sharing cluster did not acknowledge its writes")
        consumer = Consumer({**conf, "group.id": "class-sharing", "auto.offset.reset": "earliest"})
        consumer.subscribe(["class-sharing"])
        read = 0
        for _ in range(30):
            read += len(consumer.consume(100, timeout=1))
            if read >= 100:
                break
        consumer.close()
        for broker_id in cluster.broker_ids:
            cluster.stop_broker(broker_id)  # a controlled shutdown, its classes listed too
    finally:
        cluster.stop()
    return lists


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Kafka nodes' class-sharing archive.")
    parser.add_argument("group", nargs="?", default=configs.KAFKA_NEWEST, help="a Kafka jar group")
    args = parser.parse_args(argv)
    try:
        path = build(args.group)
    except KmedicError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"class-sharing archive of {args.group}: {path} ({path.stat().st_size // 2**20} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
