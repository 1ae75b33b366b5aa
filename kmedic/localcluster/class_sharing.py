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

The Spark driver of a local job (the pipeline's stream, the tests' shared session) loads
about 15,000 classes: its archive (``spark_driver_options``), recorded from a small local job by
``streaming/class_sharing_build.py``, takes a driver's start and first batches from about 22 to
14 CPU-seconds. It is checked against the driver's class path, which pyspark's launcher
builds from its own install; only local drivers started by the project use it.

Where it is missing, or made by another JVM, a node starts as before: the JVM maps nothing and
says nothing, so ``tests/integration/test_class_sharing.py`` checks from /proc that a running
node maps it. The archive is a build product of this machine's JDK and jars, never shipped: a
cluster in containers (tests/container_cluster.py) runs without it.
"""

from __future__ import annotations

from pathlib import Path

from kmedic.paths import jvm_dir

ARCHIVE = "kafka-nodes.jsa"
SPARK_DRIVER_ARCHIVE = "spark-driver.jsa"


def archive_path(group: str) -> Path:
    """Where the archive of one Kafka release's jar group lives (beside its ``lib``)."""
    return jvm_dir() / group / "class-sharing" / ARCHIVE


def jvm_options(group: str) -> tuple[str, ...]:
    """The options a Kafka node of ``group`` starts with: the archive, where it was built."""
    path = archive_path(group)
    return (f"-XX:SharedArchiveFile={path}",) if path.is_file() else ()


def spark_driver_archive() -> Path:
    """Where the Spark driver's archive lives (the pyspark install it was recorded from is
    the virtualenv's: the bootstrap rebuilds it when that or the JDK changes)."""
    return jvm_dir() / "spark" / "class-sharing" / SPARK_DRIVER_ARCHIVE


def spark_driver_options() -> tuple[str, ...]:
    """The options a local Spark driver starts with besides its own: the archive, where it
    was built."""
    path = spark_driver_archive()
    return (f"-XX:SharedArchiveFile={path}",) if path.is_file() else ()
