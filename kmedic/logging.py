"""Logging, set up once for every component: structlog key-value events.

JSON lines when stderr is not a terminal (production, CI, containers); readable key-value
when it is. Standard-library loggers (kazoo, py4j, kafka-python) go through the same pipeline.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

from kmedic.log_fold import FoldRepeats
from kmedic.secrets import redact_event

_configured = False


class _StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is at the moment of each record, not the stream it
    was when logging was set up: a replaced or closed stderr never loses a later record."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass  # the stream is always the current stderr


LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")  # what --log-level takes


def log_level(text: str) -> str:
    """A ``--log-level`` argument as a level name (any case); argparse's type, so that a
    name not in ``LEVELS`` is a usage error naming the choices, not a traceback."""
    return text.upper()


def setup_logging(level: str = "INFO", *, json: bool | None = None) -> None:
    """Configure structlog and the stdlib root logger. Safe to call more than once."""
    global _configured
    if json is None:
        json = not sys.stderr.isatty()
    renderer: Any = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            redact_event,  # last before rendering: exception texts are redacted too
            renderer,
        ],
    )
    handler = _StderrHandler()
    handler.setFormatter(formatter)
    handler.addFilter(FoldRepeats())  # a client library's retries: one line per state change
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Chatty libraries stay at WARNING unless asked for.
    for noisy in LIBRARY_LOGGERS:
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))
    _configured = True


# Libraries that log on their way to an error a tool then states in one line of its own.
LIBRARY_LOGGERS = ("kazoo.client", "kafka", "py4j", "urllib3")


def quiet_for_a_tool() -> None:
    """A one-shot tool (not a role) ends a failure with one line naming what is unreachable;
    the client libraries' retries and errors, librdkafka's lines and kmedic's own start-up
    warning before it are noise there (they were five lines before the one that says it all).
    They stay visible with ``--log-level DEBUG``."""
    root = logging.getLogger()
    if root.level <= logging.DEBUG:
        return
    for handler in root.handlers:
        handler.addFilter(_client_library_line)


_TOOL_QUIET = (*LIBRARY_LOGGERS, "kmedic.kafka_preflight")


def _client_library_line(record: logging.LogRecord) -> bool:
    """False for a client library's line below CRITICAL (the Kafka and ZooKeeper clients, the
    loggers librdkafka's lines are routed to: "....rdkafka...")."""
    name = record.name
    library = ".rdkafka" in name or any(
        name == prefix or name.startswith(prefix + ".") for prefix in _TOOL_QUIET
    )
    return not library or record.levelno >= logging.CRITICAL


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A logger for one component; configures logging with defaults on first use."""
    if not _configured:
        setup_logging()
    logger: structlog.stdlib.BoundLogger = structlog.get_logger(name)
    return logger
