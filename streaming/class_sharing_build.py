"""Building the local Spark driver's class-sharing archive
(kmedic/localcluster/class_sharing.py): a small local job records the classes its driver loads
(``-XX:DumpLoadedClassList``), then ``java -Xshare:dump`` writes them against the very class
path and module options that driver ran with, read back from its command line (the JVM checks
the class path at every start). ``make bootstrap`` runs ``main`` once per JDK and pyspark.

The job: a static aggregation, then a streaming windowed count from Spark's rate source into
the memory sink with the job's own session settings (the RocksDB state store among them), two
micro-batches: Spark SQL's planner, code generation and the state store, as the stream's
driver loads them, without a Kafka cluster.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kmedic.errors import KmedicError
from kmedic.localcluster.class_sharing import spark_driver_archive
from kmedic.localcluster.process import LIGHT_JVM_OPTIONS
from streaming.config import SparkConfig
from streaming.session import build_session


def record(class_list: Path, command_line: Path) -> None:
    """Run the small job in this process's driver, its classes listed to ``class_list`` and
    the driver's command line (NUL-separated, as /proc has it) kept in ``command_line``."""
    from pyspark.sql import functions

    cfg = SparkConfig(
        master="local[2]",
        shuffle_partitions=2,
        driver_memory="768m",
        local_dir=str(class_list.parent / "scratch"),
        driver_java_options=[*LIGHT_JVM_OPTIONS, f"-XX:DumpLoadedClassList={class_list}"],
    )
    spark = build_session(cfg, with_kafka=False)
    try:
        gateway = spark.sparkContext._gateway
        if gateway is None:
            raise KmedicError("the recording Spark session has no JVM gateway")
        pid = gateway.proc.pid  # spark-class execs the JVM in place
        command_line.write_bytes(Path(f"/proc/{pid}/cmdline").read_bytes())
        static = spark.range(1000).selectExpr("id % 7 AS k", "id AS v").groupBy("k").sum("v")
        static.collect()
        counts = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 20)
            .load()
            .withWatermark("timestamp", "10 seconds")
            .groupBy(functions.window("timestamp", "10 seconds", "5 seconds"))
            .count()
            .writeStream.outputMode("update")
            .format("memory")
            .queryName("class_sharing")
            .option("checkpointLocation", str(class_list.parent / "checkpoint"))
            .start()
        )
        for _ in range(2):
            counts.processAllAvailable()
        counts.stop()
    finally:
        spark.stop()


def dump_command(recorded: list[str], class_list: Path, archive: Path) -> list[str]:
    """``java -Xshare:dump`` with the recorded driver's class path and module options."""
    if "-cp" not in recorded or recorded.index("-cp") + 1 >= len(recorded):
        raise KmedicError(f"the recorded Spark driver has no class path: {recorded[:6]}")
    classpath = recorded[recorded.index("-cp") + 1]
    modules = [a for a in recorded if a.startswith(("--add-modules", "--add-opens"))]
    return [
        recorded[0],
        *LIGHT_JVM_OPTIONS,
        "-Xmx768m",
        "-Xshare:dump",
        f"-XX:SharedClassListFile={class_list}",
        f"-XX:SharedArchiveFile={archive}",
        "-Xlog:cds=error",  # not a warning per class it leaves out (signed jars)
        "-cp",
        classpath,
        *modules,
    ]


def build() -> Path:
    """Record a small job's driver in a fresh process, then dump its classes into the
    archive (replacing it atomically). About two minutes; raises KmedicError naming what
    failed."""
    target = spark_driver_archive()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kmedic-spark-class-sharing-") as tmp:
        class_list, command_line = Path(tmp) / "classes.lst", Path(tmp) / "cmdline"
        job = subprocess.run(
            [sys.executable, "-m", "streaming.class_sharing_build", "--record", tmp],
            capture_output=True,
            text=True,
        )
        if job.returncode != 0 or not class_list.is_file() or not command_line.is_file():
            raise KmedicError(
                f"the Spark job that records the driver's classes failed (exit "
                f"{job.returncode}): {(job.stderr or job.stdout).strip()[-800:]}"
            )
        recorded = command_line.read_bytes().decode().rstrip("\0").split("\0")
        partial = target.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        done = subprocess.run(
            dump_command(recorded, class_list, partial), capture_output=True, text=True
        )
        if done.returncode != 0 or not partial.is_file():
            raise KmedicError(
                f"dumping the Spark driver's class-sharing archive failed (exit "
                f"{done.returncode}): {(done.stderr or done.stdout).strip()[-800:]}"
            )
        partial.replace(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build the local Spark driver's class-sharing archive."
    )
    parser.add_argument("--record", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.record is not None:
            record(Path(args.record) / "classes.lst", Path(args.record) / "cmdline")
            return 0
        path = build()
    except KmedicError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"Spark driver's class-sharing archive: {path} ({path.stat().st_size // 2**20} MiB)")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
