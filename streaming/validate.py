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
from dataclasses import dataclass
from typing import TYPE_CHECKING, get_args

from kmedic.brokerstats import FailureReason, RateEstimate
from streaming.config import ValidationConfig, duration_seconds
from streaming.schema import (
    ARRAY_FIELDS,
    NULLABLE_LOG_DIR,
    NULLABLE_TOP_LEVEL,
    RATE_FIELDS,
    brokerstats_schema,
)

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

_CORRUPT = "_corrupt_record"
# Fields whose values must be >= 0 (mirrors the model's ge=0 constraints).
_NON_NEGATIVE_TOP = ("broker_id", "chunk_index", "timestamp_ms")
_NON_NEGATIVE_LEADER = ("partition", "log_size_bytes", "log_start_offset", "log_end_offset")
_NON_NEGATIVE_FOLLOWER = ("partition", "log_size_bytes", "log_end_offset")
_NON_NEGATIVE_TOTALS = (
    "leader_count",
    "follower_count",
    "reassigning_count",
    "under_replicated_count",
    "log_size_bytes",
)


@dataclass(frozen=True)
class _Check:
    reason: str
    failed: Column
    detail: Column


@dataclass(frozen=True)
class _ElementCheck:
    """A test of every element of one array field. All tests of an array run first as one
    combined pass (``_suspect`` column); the per-test passes that name the problem run only
    for records that failed it. Higher-order functions are interpreted, so for a record with
    thousands of replicas this is the difference between one pass and dozens."""

    reason: str
    array: str
    test: Callable[[Column], Column]
    detail: str

    def as_check(self) -> _Check:
        from pyspark.sql import functions as F

        failed = F.col(_suspect(self.array)) & F.exists(F.col("record")[self.array], self.test)
        return _Check(self.reason, failed, _lit(self.detail))


def _suspect(array: str) -> str:
    return f"_suspect_{array}"


def _lit(text: str) -> Column:
    from pyspark.sql import functions as F

    return F.lit(text)


def _bad_rate(value: Column) -> Column:
    from pyspark.sql import functions as F

    return F.isnan(value) | (value < 0) | (F.abs(value) == F.lit(float("inf")))


def _on_field(name: str, test: Callable[[Column], Column]) -> Callable[[Column], Column]:
    """A one-argument lambda for F.exists (Spark counts the lambda's parameters)."""
    return lambda element: test(element[name])


def _element_checks(
    array: str, element_fields: list[str], nullable: frozenset[str]
) -> list[_ElementCheck]:
    """One check per required field of the elements of ``array``."""
    checks = [
        _ElementCheck("schema_mismatch", array, lambda e: e.isNull(), f"{array}[]: null entry")
    ]
    checks += [
        _ElementCheck(
            "schema_mismatch",
            array,
            _on_field(name, lambda v: v.isNull()),
            f"{array}[].{name}: missing, null or of the wrong type",
        )
        for name in element_fields
        if name not in nullable
    ]
    return checks


def _checks(cfg: ValidationConfig) -> list[_Check | _ElementCheck]:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StructType

    rec = F.col("record")
    schema = brokerstats_schema()
    versions = [str(v) for v in cfg.supported_schema_versions]
    checks: list[_Check | _ElementCheck] = [
        _Check(
            "invalid_json",
            F.col("json_map").isNull(),
            _lit("not a JSON object (empty, truncated or not an object)"),
        ),
        _Check(
            "unsupported_schema_version",
            F.col("json_map")["schema_version"].isNull()
            | ~F.col("json_map")["schema_version"].isin(versions),
            F.concat(
                _lit("schema_version "),
                F.coalesce(F.col("json_map")["schema_version"], _lit("(missing)")),
                _lit(f" is not one of {', '.join(versions)}"),
            ),
        ),
    ]
    for array in ARRAY_FIELDS:
        checks.append(
            _Check(
                "oversize_array",
                F.size(rec[array]) > cfg.max_array_entries,
                F.concat(
                    _lit(f"{array} has "),
                    F.size(rec[array]).cast("string"),
                    _lit(f" entries, more than {cfg.max_array_entries}"),
                ),
            )
        )
    for field in schema.fields:
        if field.name not in NULLABLE_TOP_LEVEL:
            checks.append(
                _Check(
                    "schema_mismatch",
                    rec[field.name].isNull(),
                    _lit(f"{field.name}: missing, null or of the wrong type"),
                )
            )
    for field in schema.fields:
        kind = field.dataType
        if isinstance(kind, ArrayType) and isinstance(kind.elementType, StructType):
            nullable = NULLABLE_LOG_DIR if field.name == "log_dirs" else frozenset()
            checks.extend(_element_checks(field.name, kind.elementType.fieldNames(), nullable))
        elif isinstance(kind, StructType) and field.name == "totals":
            checks.extend(
                _Check(
                    "schema_mismatch",
                    rec["totals"][n].isNull(),
                    _lit(f"totals.{n}: missing, null or of the wrong type"),
                )
                for n in kind.fieldNames()
            )
    checks.append(
        _Check(
            "schema_mismatch",
            rec["failure"].isNotNull()
            & (rec["failure"]["reason"].isNull() | rec["failure"]["message"].isNull()),
            _lit("failure: needs both reason and message"),
        )
    )
    # A field of the wrong type that none of the checks above caught (a nested one).
    checks.append(
        _Check(
            "schema_mismatch",
            F.col(_CORRUPT).isNotNull(),
            _lit("a field has the wrong type for BrokerStats v1"),
        )
    )
    checks.extend(_constraint_checks())
    checks.extend(_rate_checks())
    skew_ms = int(duration_seconds(cfg.max_future_skew) * 1000)
    checks.append(
        _Check(
            "future_timestamp",
            rec["timestamp_ms"] > F.col("now_ms") + F.lit(skew_ms),
            F.concat(
                _lit("timestamp_ms "),
                rec["timestamp_ms"].cast("string"),
                _lit(f" is more than {cfg.max_future_skew} ahead of "),
                F.col("now_ms").cast("string"),
            ),
        )
    )
    if cfg.max_lateness is not None:
        late_ms = int(duration_seconds(cfg.max_lateness) * 1000)
        appended_ms = F.unix_millis(F.col("timestamp"))
        checks.append(
            _Check(
                "late_record",
                appended_ms - rec["timestamp_ms"] > F.lit(late_ms),
                F.concat(
                    _lit("timestamp_ms "),
                    rec["timestamp_ms"].cast("string"),
                    _lit(f" is more than {cfg.max_lateness} before its Kafka append time "),
                    appended_ms.cast("string"),
                    _lit(": past the watermark"),
                ),
            )
        )
    return checks


def _constraint_checks() -> list[_Check | _ElementCheck]:
    from pyspark.sql import functions as F

    rec = F.col("record")
    checks: list[_Check | _ElementCheck] = [
        _Check("schema_mismatch", rec[n] < 0, _lit(f"{n}: negative")) for n in _NON_NEGATIVE_TOP
    ]
    checks += [
        _Check("schema_mismatch", rec["totals"][n] < 0, _lit(f"totals.{n}: negative"))
        for n in _NON_NEGATIVE_TOTALS
    ]
    checks += [
        _ElementCheck(
            "schema_mismatch", "leaders", _on_field(n, lambda v: v < 0), f"leaders[].{n}: negative"
        )
        for n in _NON_NEGATIVE_LEADER
    ]
    checks += [
        _ElementCheck(
            "schema_mismatch",
            "followers",
            _on_field(n, lambda v: v < 0),
            f"followers[].{n}: negative",
        )
        for n in _NON_NEGATIVE_FOLLOWER
    ]
    estimates = list(get_args(RateEstimate))
    reasons = list(get_args(FailureReason))
    checks += [
        _Check(
            "schema_mismatch",
            (rec["chunk_count"] < 1) | (rec["chunk_index"] >= rec["chunk_count"]),
            _lit("chunk_index/chunk_count: index must be below a count of at least 1"),
        ),
        _Check(
            "schema_mismatch",
            (rec["interval_s"] <= 0) | F.isnan(rec["interval_s"]),
            _lit("interval_s: must be above zero"),
        ),
        _ElementCheck(
            "schema_mismatch",
            "leaders",
            lambda e: ~e["estimate"].isin(estimates),
            f"leaders[].estimate: not one of {', '.join(estimates)}",
        ),
        _Check(
            "schema_mismatch",
            rec["failure"].isNotNull() & ~rec["failure"]["reason"].isin(reasons),
            _lit(f"failure.reason: not one of {', '.join(reasons)}"),
        ),
    ]
    return checks


def _rate_checks() -> list[_Check | _ElementCheck]:
    from pyspark.sql import functions as F

    rec = F.col("record")
    checks: list[_Check | _ElementCheck] = [
        _ElementCheck(
            "invalid_rate",
            "leaders",
            _on_field(n, _bad_rate),
            f"leaders[].{n}: negative, NaN or infinite",
        )
        for n in RATE_FIELDS
    ]
    checks += [
        _Check(
            "invalid_rate",
            _bad_rate(rec["totals"][n]),
            _lit(f"totals.{n}: negative, NaN or infinite"),
        )
        for n in RATE_FIELDS
    ]
    checks.append(
        _Check(
            "invalid_rate",
            _bad_rate(rec["rate_window_s"]),
            _lit("rate_window_s: negative, NaN or infinite"),
        )
    )
    return checks


def parse_and_validate(raw: DataFrame, cfg: ValidationConfig) -> DataFrame:
    """Kafka rows (key, value, topic, partition, offset, timestamp) -> the same rows plus
    ``record`` (the parsed struct), ``reason`` and ``detail`` (both null for a good record).

    ``now_ms`` is the time the micro-batch runs (``current_timestamp``), taken once per batch.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    schema = brokerstats_schema()
    with_corrupt = StructType([*schema.fields, StructField(_CORRUPT, StringType(), True)])
    text = F.col("value").cast("string")
    parsed = _materialize(
        raw,
        {
            "json_map": F.from_json(text, "map<string,string>"),
            "parsed": F.from_json(
                text,
                with_corrupt,
                {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT},
            ),
        },
    ).withColumn("now_ms", F.unix_millis(F.current_timestamp()))
    parsed = parsed.withColumns(
        {
            "record": F.struct(*[F.col("parsed")[f.name].alias(f.name) for f in schema.fields]),
            _CORRUPT: F.col("parsed")[_CORRUPT],
        }
    )
    checks = _checks(cfg)
    by_array: dict[str, list[Callable[[Column], Column]]] = {}
    for check in checks:
        if isinstance(check, _ElementCheck):
            by_array.setdefault(check.array, []).append(check.test)
    parsed = _materialize(
        parsed,
        {
            _suspect(array): F.exists(F.col("record")[array], _any_of(tests))
            for array, tests in by_array.items()
        },
    )
    plain = [c.as_check() if isinstance(c, _ElementCheck) else c for c in checks]
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
            _CORRUPT,
            "now_ms",
            "_barrier",
            "_verdict",
            *map(_suspect, by_array),
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


def dlq_rows(validated: DataFrame, source_topic_header: str = "kmedic.source") -> DataFrame:
    """DLQ rows: the original key and value bytes; reason, detail and origin in headers."""
    from pyspark.sql import functions as F

    def header(name: str, value: Column) -> Column:
        return F.struct(
            F.lit(name).alias("key"), value.cast("string").cast("binary").alias("value")
        )

    origin = F.concat_ws(
        "/", F.col("topic"), F.col("partition").cast("string"), F.col("offset").cast("string")
    )
    return validated.where(F.col("reason").isNotNull()).select(
        F.col("key"),
        F.col("value"),
        F.array(
            header("kmedic.reason", F.col("reason")),
            header("kmedic.detail", F.col("detail")),
            header(source_topic_header, origin),
            header("kmedic.source.timestamp_ms", F.unix_millis(F.col("timestamp"))),
        ).alias("headers"),
    )
