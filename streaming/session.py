"""Building the SparkSession: small, quiet, with the Kafka connector on the class path.

The connector jars come from ``.cache/jvm/spark-kafka/lib`` and the job's own stateful function
from ``.cache/jvm/kmedic-spark/lib/kmedic-spark.jar`` (both made by ``make bootstrap``).
Jars pyspark already ships (Scala, Hadoop client, codecs) are left out even when the cache
holds them, so the driver never sees two versions of one library.
Under ``spark-submit`` (``SparkConfig.master`` is None) the master and the jars come from the
command line and this module adds neither.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from kmedic.errors import KmedicError
from streaming.config import SparkConfig

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parent.parent
CONNECTOR_DIR_ENV = "KMEDIC_SPARK_KAFKA_LIB"
FUNCTIONS_JAR_ENV = "KMEDIC_SPARK_FUNCTIONS_JAR"
_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def _artifact(jar: Path) -> str:
    match = _VERSIONED_JAR.match(jar.name)
    return match.group("artifact") if match else jar.stem


def connector_lib_dir() -> Path:
    return Path(os.environ.get(CONNECTOR_DIR_ENV, REPO_ROOT / ".cache/jvm/spark-kafka/lib"))


def connector_jars(lib_dir: Path | None = None) -> list[Path]:
    """The Kafka connector jars that pyspark does not already ship, sorted by name."""
    import pyspark

    lib = lib_dir or connector_lib_dir()
    jars = sorted(lib.glob("*.jar")) if lib.is_dir() else []
    if not any(j.name.startswith("spark-sql-kafka") for j in jars):
        raise KmedicError(
            f"the Spark Kafka connector is missing from {lib}: run `make bootstrap` "
            f"(or set {CONNECTOR_DIR_ENV} to a directory holding spark-sql-kafka-0-10 jars)"
        )
    shipped = {_artifact(j) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return [j for j in jars if _artifact(j) not in shipped]


def functions_jar() -> Path:
    """The jar of streaming/jvm (the bucket ring), which every session of the job needs."""
    jar = Path(
        os.environ.get(
            FUNCTIONS_JAR_ENV, REPO_ROOT / ".cache/jvm/kmedic-spark/lib/kmedic-spark.jar"
        )
    )
    if not jar.is_file():
        raise KmedicError(
            f"the job's JVM function is missing: {jar} does not exist: run `make bootstrap` "
            f"(or set {FUNCTIONS_JAR_ENV} to a kmedic-spark.jar)"
        )
    return jar


def build_session(cfg: SparkConfig, *, with_kafka: bool = True) -> SparkSession:
    """A SparkSession for the job; reuses the active one if there is one.

    ``with_kafka=False`` leaves the connector out (pure transforms on static data need none).
    """
    from pyspark.sql import SparkSession

    if cfg.local_dir is not None:
        Path(cfg.local_dir).mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.appName(cfg.app_name)
    if cfg.master is not None:
        builder = builder.master(cfg.master)
    for key, value in session_settings(cfg, with_kafka=with_kafka).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def session_settings(cfg: SparkConfig, *, with_kafka: bool = True) -> dict[str, str]:
    """The Spark settings ``build_session`` gives the builder (``spark.conf`` last, over all)."""
    settings: dict[str, str] = {
        "spark.sql.shuffle.partitions": str(cfg.shuffle_partitions),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Keeps the shuffle (and state store) partition count what the config says.
        "spark.sql.adaptive.enabled": "false",
        # Window state off the JVM heap: one row per key and window adds up on large fleets
        # (the in-memory default keeps two versions of all of it on the heap).
        "spark.sql.streaming.stateStore.providerClass": (
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
        ),
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        # A query that will not stop (a write stuck on an unreachable broker) must not hold
        # up the job's shutdown for ever (Spark's default waits without bound).
        "spark.sql.streaming.stopTimeout": "30s",
        # Catalyst's constraint propagation over the large validation expression cost tens of
        # seconds of planning per micro-batch (PruneFilters); off, the plan takes well under a
        # second. It only infers extra filters, so results are the same.
        "spark.sql.constraintPropagation.enabled": "false",
    }
    if cfg.master is not None:
        settings["spark.driver.memory"] = cfg.driver_memory
        jars = [functions_jar(), *(connector_jars() if with_kafka else [])]
        settings["spark.jars"] = ",".join(str(j) for j in jars)
        if cfg.master.startswith("local"):
            # An embedded driver talks to itself only: keep it on loopback instead of the
            # address the host name happens to resolve to.
            settings["spark.driver.host"] = "127.0.0.1"
            settings["spark.driver.bindAddress"] = "127.0.0.1"
        # Quiet JVM logging on a terminal; log4j2 reads this property at start.
        java = [f"-Dlog4j2.configurationFile={REPO_ROOT / 'configs' / 'spark-log4j2.properties'}"]
        if cfg.local_dir is not None:
            java.append(f"-Djava.io.tmpdir={cfg.local_dir}")
        settings["spark.driver.extraJavaOptions"] = " ".join([*java, *cfg.driver_java_options])
    if cfg.local_dir is not None:
        settings["spark.local.dir"] = cfg.local_dir
    settings.update(cfg.conf)
    return settings
