"""Parsing and validating raw BrokerStats records (pure DataFrame transforms, no I/O).

Every input row gets either a parsed record or a reason. Bad rows are never dropped: they become
DLQ rows carrying the original key and bytes unchanged, the reason and a detail in headers, and
where they came from. A bad record never raises: Spark only ever evaluates null-safe expressions
over the row, so the query cannot die because of data.

Reasons, checked in this order (the first that applies wins):

``invalid_json``               not a JSON object (empty, truncated, an array, plain text)
``unsupported_schema_version`` ``schema_version`` is not one this job reads (missing counts too)
``oversize_array``             an array holds more entries than ``max_array_entries``
``schema_mismatch``            a required field is missing, null or of the wrong type, or breaks
                               a constraint of the model (negative id, unknown enum value, ...)
``invalid_rate``               a rate is negative, NaN or infinite
``future_timestamp``           ``timestamp_ms`` is later than now + ``max_future_skew``
``late_record``                ``timestamp_ms`` is earlier than the record's Kafka append time by
                               more than ``max_lateness`` (only when set; docs/streaming.md)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kmedic.brokerstats import HEARTBEAT_PREFIX
from streaming.checks import CORRUPT_COLUMN, ElementCheck, all_checks, suspect_column
from streaming.config import ValidationConfig
from streaming.schema import brokerstats_schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

REASONS = (
    "invalid_json",
    "unsupported_schema_version",
    "oversize_array",
    "schema_mismatch",
    "invalid_rate",
    "future_timestamp",
    "late_record",
)


def parse_and_validate(raw: DataFrame, cfg: ValidationConfig) -> DataFrame:
    """Kafka rows (key, value, topic, partition, offset, timestamp) -> the same rows plus
    ``record`` (the parsed struct), ``reason`` and ``detail`` (both null for a good record).

    ``now_ms`` is the time the micro-batch runs (``current_timestamp``), taken once per batch.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    schema = brokerstats_schema()
    with_corrupt = StructType([*schema.fields, StructField(CORRUPT_COLUMN, StringType(), True)])
    text = F.col("value").cast("string")
    # An agent's heartbeats share the topic with its samples and carry no figure: left out
    # here, before anything parses them (they are no bad record either).
    raw = raw.filter(~F.coalesce(text.startswith(HEARTBEAT_PREFIX.decode()), F.lit(False)))
    parsed = _materialize(
        raw,
        {
            "json_map": F.from_json(text, "map<string,string>"),
            "parsed": F.from_json(
                text,
                with_corrupt,
                {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_COLUMN},
            ),
        },
    ).withColumn("now_ms", F.unix_millis(F.current_timestamp()))
    parsed = parsed.withColumns(
        {
            "record": F.struct(*[F.col("parsed")[f.name].alias(f.name) for f in schema.fields]),
            CORRUPT_COLUMN: F.col("parsed")[CORRUPT_COLUMN],
        }
    )
    checks = all_checks(cfg)
    by_array: dict[str, list[Callable[[Column], Column]]] = {}
    for check in checks:
        if isinstance(check, ElementCheck):
            by_array.setdefault(check.array, []).append(check.test)
    parsed = _materialize(
        parsed,
        {
            suspect_column(array): F.exists(F.col("record")[array], _any_of(tests))
            for array, tests in by_array.items()
        },
    )
    plain = [c.as_check() if isinstance(c, ElementCheck) else c for c in checks]
    # The first failing check names the reason; `when` without otherwise yields null. Reason
    # and detail come out of one expression so the checks run once per record.
    verdict = F.coalesce(
        *[
            F.when(c.failed, F.struct(F.lit(c.reason).alias("r"), c.detail.alias("d")))
            for c in plain
        ]
    )
    return (
        parsed.withColumn("_verdict", verdict)
        .withColumns({"reason": F.col("_verdict.r"), "detail": F.col("_verdict.d")})
        .drop(
            "json_map",
            "parsed",
            CORRUPT_COLUMN,
            "now_ms",
            "_barrier",
            "_verdict",
            *map(suspect_column, by_array),
        )
    )


def _materialize(df: DataFrame, columns: dict[str, Column]) -> DataFrame:
    """Add columns computed once per row by a generator (inline of a one-element array).

    A plain projection would do, except that Spark pushes a filter on the verdict below it by
    copying each expression into every check that reads it: the parse, or a pass over
    thousands of replicas, would then run dozens of times per record.
    """
    from pyspark.sql import functions as F

    fields = [expr.alias(name) for name, expr in columns.items()]
    return df.select("*", F.inline(F.array(F.struct(*fields))))


def _any_of(tests: list[Callable[[Column], Column]]) -> Callable[[Column], Column]:
    def combined(element: Column) -> Column:
        result = tests[0](element)
        for test in tests[1:]:
            result = result | test(element)
        return result

    return combined


def good_records(validated: DataFrame) -> DataFrame:
    """The parsed records that passed every check, one column per BrokerStats field."""
    from pyspark.sql import functions as F

    return validated.where(F.col("reason").isNull()).select("record.*")


def source_origin() -> Column:
    """Where a Kafka row came from: ``topic/partition/offset``."""
    from pyspark.sql import functions as F

    return F.concat_ws(
        "/", F.col("topic"), F.col("partition").cast("string"), F.col("offset").cast("string")
    )


def dlq_headers(source_topic_header: str = "kmedic.source") -> Column:
    """A DLQ record's headers: reason, detail, where it came from and its append time."""
    from pyspark.sql import functions as F

    def header(name: str, value: Column) -> Column:
        return F.struct(
            F.lit(name).alias("key"), value.cast("string").cast("binary").alias("value")
        )

    return F.array(
        header("kmedic.reason", F.col("reason")),
        header("kmedic.detail", F.col("detail")),
        header(source_topic_header, source_origin()),
        header("kmedic.source.timestamp_ms", F.unix_millis(F.col("timestamp"))),
    )


def dlq_rows(validated: DataFrame) -> DataFrame:
    """DLQ rows: the original key and value bytes; reason, detail and origin in headers."""
    from pyspark.sql import functions as F

    return validated.where(F.col("reason").isNotNull()).select(
        F.col("key"), F.col("value"), dlq_headers().alias("headers")
    )
