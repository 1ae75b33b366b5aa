"""One small SparkSession per test run, shared by unit and integration tests.

local[2], two shuffle partitions, 1 GB driver, C1 alone and the serial collector (a short-lived
driver on two shared cores: docs/streaming.md), its classes mapped from the bootstrap's
archive (kmedic/localcluster/class_sharing.py); the Kafka connector jars are on the class path
when `make bootstrap` fetched them (integration tests need them, unit tests do not).
"""

from __future__ import annotations

from typing import Any

from kmedic.errors import KmedicError
from kmedic.localcluster.class_sharing import spark_driver_options
from kmedic.localcluster.process import LIGHT_JVM_OPTIONS
from streaming.config import SparkConfig
from streaming.session import build_session, connector_jars

_SESSION: Any = None


def connector_missing() -> str | None:
    """None when the Spark Kafka connector is present, else why not."""
    try:
        connector_jars()
    except KmedicError as exc:
        return str(exc)
    return None


def shared_spark() -> Any:
    global _SESSION
    if _SESSION is None:
        cfg = SparkConfig(
            master="local[2]",
            shuffle_partitions=2,
            driver_memory="1g",
            driver_java_options=[*LIGHT_JVM_OPTIONS, *spark_driver_options()],
        )
        _SESSION = build_session(cfg, with_kafka=connector_missing() is None)
    return _SESSION


def stop_spark() -> None:
    global _SESSION
    if _SESSION is not None:
        _SESSION.stop()
        _SESSION = None
