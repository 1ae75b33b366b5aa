"""`kmedic stream --config FILE`: run the streaming job until interrupted (or, with
``--available-now``, until the source topic is drained).

The same code runs under ``spark-submit`` through streaming/submit.py (docs/streaming.md).
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from kmedic.errors import KmedicError, first_line
from kmedic.kafka_preflight import check_credentials
from kmedic.logging import get_logger
from kmedic.web_config import load_web_config
from streaming.config import StreamConfig, load_stream_config

log = get_logger(__name__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "stream",
        help="run the Spark job: broker stats -> windowed replica and broker loads",
        description="Validate kmedic.brokerstats, write bad records to the DLQ and windowed "
        "per-replica and per-broker loads to compacted topics.",
    )
    add_arguments(parser)
    parser.set_defaults(func=run_from_args)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="YAML config (configs/stream.example.yaml)")
    parser.add_argument(
        "--available-now",
        action="store_true",
        default=None,
        help="process what is in the topic now, then stop",
    )
    parser.add_argument("--master", help="Spark master (default from config: local[*])")


def config_from_args(args: argparse.Namespace, *, under_submit: bool = False) -> StreamConfig:
    cfg = load_stream_config(args.config)
    updates: dict[str, Any] = {}
    if args.available_now:
        updates["available_now"] = True
    spark = cfg.spark
    if under_submit:
        spark = spark.model_copy(update={"master": None})
    elif args.master:
        spark = spark.model_copy(update={"master": args.master})
    updates["spark"] = spark
    return cfg.model_copy(update=updates)


def _stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM (docker stop, the pipeline's stop) and Ctrl-C set ``stop``: the loop then stops
    the queries and Spark. The handler raises nothing the first time (streaming.job,
    await_queries, says why); a second signal interrupts whatever is running, for an operator
    who will not wait. Only possible from the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()  # logged by the loop: writing a log line here could re-enter the stream

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)


def run(cfg: StreamConfig) -> int:
    from streaming import job, topics
    from streaming.metrics import StreamMetrics
    from streaming.session import build_session
    from streaming.supervise import supervise

    stop = threading.Event()
    _stop_on_signals(stop)
    check_credentials(cfg.cluster_client, role="stream")
    if cfg.create_topics:
        topics.ensure_output_topics_when_up(cfg, stop)
        if stop.is_set():
            log.info("stream_stopped", why="signal before Kafka answered")
            return 0
    metrics = StreamMetrics(cfg.cluster)
    server = None
    if cfg.metrics_port is not None:
        web = load_web_config(cfg.web_config_file) if cfg.web_config_file else None
        server = metrics.serve(cfg.metrics_host, cfg.metrics_port, web)
        log.info(
            "stream_metrics_serving", host=cfg.metrics_host, port=server.port, scheme=server.scheme
        )
    spark = build_session(cfg.spark)
    queries: list[Any] = []

    def start() -> list[Any]:
        queries[:] = job.start_queries(spark, cfg)
        return queries

    def wait(running: list[Any]) -> None:
        job.await_queries(running, on_poll=metrics.observe, stop=stop)

    try:
        supervise(start, wait, cfg.restart.policy(), stop=stop, on_restart=metrics.restarts.inc)
        if stop.is_set():
            log.info("stream_stopping", why="signal")
    except KeyboardInterrupt:
        log.info("stream_stopping", why="interrupted")
    except Exception as exc:  # Spark and py4j errors: one line for the user, details logged
        first = first_line(exc)
        if stop.is_set():
            # A signal to the whole process group (systemd's default, the pipeline's stop)
            # reaches Spark's JVM too: it shuts down while the loop still talks to it.
            log.info("stream_stopping", why="signal", jvm=first)
        elif isinstance(exc, KmedicError):
            raise
        else:
            log.exception("stream_failed")
            raise KmedicError(f"the streaming job failed: {first}") from exc
    finally:
        job.stop_queries(queries)
        log.info("stream_queries_stopped")
        stop_spark(spark, already_going=stop.is_set())
        if server is not None:
            server.stop()
    log.info("stream_stopped")
    return 0


def stop_spark(spark: Any, *, already_going: bool) -> None:
    """Stop Spark; a JVM that is gone already (it got the signal too) is not an error then."""
    try:
        spark.stop()
    except Exception as exc:  # py4j: the JVM is not there to answer
        if not already_going:
            raise
        log.info("spark_already_stopped", error=f"{type(exc).__name__}: {first_line(exc)}")


def run_from_args(args: argparse.Namespace) -> int:
    return run(config_from_args(args))
