"""Class data sharing for the local cluster's Kafka JVMs: their start-up, halved.

A Kafka node loads about 7,500 classes at start, and parsing and verifying them is most of the
CPU its start costs. The JVM can map them, already parsed and verified, from an archive made
once (AppCDS, JDK 17): measured on 2 cores, a broker's start 6 -> 3 CPU-seconds, a
controller's 5 -> 2.7, a 2-broker cluster's start 21-28 s -> 12 s.

The archive is built once per Kafka release by ``make bootstrap`` (class_sharing_build.py): a
small cluster runs with each Kafka node writing the classes it loads
(``-XX:DumpLoadedClassList``) through a start, a replicated topic's writes and reads and a
controlled shutdown; then ``java -Xshare:dump`` writes the archive from their union, against the
same class path the nodes run with (the JVM checks it).

Where it is missing, or made by another JVM, a node starts as before: the JVM maps nothing and
says nothing, so ``tests/integration/test_class_sharing.py`` checks from /proc that a running
node maps it. The archive is a build product of this machine's JDK and jars, never shipped: a
cluster in containers (tests/container_cluster.py) runs without it.
"""

from __future__ import annotations

from pathlib import Path

from kmedic.paths import jvm_dir

ARCHIVE = "kafka-nodes.jsa"


def archive_path(group: str) -> Path:
    """Where the archive of one Kafka release's jar group lives (beside its ``lib``)."""
    return jvm_dir() / group / "class-sharing" / ARCHIVE


def jvm_options(group: str) -> tuple[str, ...]:
    """The options a Kafka node of ``group`` starts with: the archive, where it was built."""
    path = archive_path(group)
    return (f"-XX:SharedArchiveFile={path}",) if path.is_file() else ()
