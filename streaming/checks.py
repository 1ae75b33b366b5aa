"""What validation checks, as Spark column expressions (pure, no I/O).

streaming.validate applies them in the order :func:`all_checks` returns them; the first that
fails names the record's DLQ reason. Each check mirrors a rule of the pydantic model in
kmedic.brokerstats (a required field, ``ge=0``, an enum) or a rule of the job's own
(rates, timestamps, array sizes), so a record an agent builds always passes.
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
    from pyspark.sql import Column

# The parse puts text it could not fit to the schema here (PERMISSIVE mode).
CORRUPT_COLUMN = "_corrupt_record"
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
class Check:
    reason: str
    failed: Column
    detail: Column


@dataclass(frozen=True)
class ElementCheck:
    """A test of every element of one array field. All tests of an array run first as one
    combined pass (``suspect_column`` column); the per-test passes that name the problem run only
    for records that failed it. Higher-order functions are interpreted, so for a record with
    thousands of replicas this is the difference between one pass and dozens."""

    reason: str
    array: str
    test: Callable[[Column], Column]
    detail: str

    def as_check(self) -> Check:
        from pyspark.sql import functions as F

        failed = F.col(suspect_column(self.array)) & F.exists(
            F.col("record")[self.array], self.test
        )
        return Check(self.reason, failed, _lit(self.detail))


def suspect_column(array: str) -> str:
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
) -> list[ElementCheck]:
    """One check per required field of the elements of ``array``."""
    checks = [
        ElementCheck("schema_mismatch", array, lambda e: e.isNull(), f"{array}[]: null entry")
    ]
    checks += [
        ElementCheck(
            "schema_mismatch",
            array,
            _on_field(name, lambda v: v.isNull()),
            f"{array}[].{name}: missing, null or of the wrong type",
        )
        for name in element_fields
        if name not in nullable
    ]
    return checks


def all_checks(cfg: ValidationConfig) -> list[Check | ElementCheck]:
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StructType

    rec = F.col("record")
    schema = brokerstats_schema()
    versions = [str(v) for v in cfg.supported_schema_versions]
    checks: list[Check | ElementCheck] = [
        Check(
            "invalid_json",
            F.col("json_map").isNull(),
            _lit("not a JSON object (empty, truncated or not an object)"),
        ),
        Check(
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
            Check(
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
                Check(
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
                Check(
                    "schema_mismatch",
                    rec["totals"][n].isNull(),
                    _lit(f"totals.{n}: missing, null or of the wrong type"),
                )
                for n in kind.fieldNames()
            )
    checks.append(
        Check(
            "schema_mismatch",
            rec["failure"].isNotNull()
            & (rec["failure"]["reason"].isNull() | rec["failure"]["message"].isNull()),
            _lit("failure: needs both reason and message"),
        )
    )
    # A field of the wrong type that none of the checks above caught (a nested one).
    checks.append(
        Check(
            "schema_mismatch",
            F.col(CORRUPT_COLUMN).isNotNull(),
            _lit("a field has the wrong type for BrokerStats v1"),
        )
    )
    checks.extend(_constraint_checks())
    checks.extend(_rate_checks())
    skew_ms = int(duration_seconds(cfg.max_future_skew) * 1000)
    checks.append(
        Check(
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
            Check(
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


def _constraint_checks() -> list[Check | ElementCheck]:
    from pyspark.sql import functions as F

    rec = F.col("record")
    checks: list[Check | ElementCheck] = [
        Check("schema_mismatch", rec[n] < 0, _lit(f"{n}: negative")) for n in _NON_NEGATIVE_TOP
    ]
    checks += [
        Check("schema_mismatch", rec["totals"][n] < 0, _lit(f"totals.{n}: negative"))
        for n in _NON_NEGATIVE_TOTALS
    ]
    checks += [
        ElementCheck(
            "schema_mismatch", "leaders", _on_field(n, lambda v: v < 0), f"leaders[].{n}: negative"
        )
        for n in _NON_NEGATIVE_LEADER
    ]
    checks += [
        ElementCheck(
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
        Check(
            "schema_mismatch",
            (rec["chunk_count"] < 1) | (rec["chunk_index"] >= rec["chunk_count"]),
            _lit("chunk_index/chunk_count: index must be below a count of at least 1"),
        ),
        Check(
            "schema_mismatch",
            (rec["interval_s"] <= 0) | F.isnan(rec["interval_s"]),
            _lit("interval_s: must be above zero"),
        ),
        ElementCheck(
            "schema_mismatch",
            "leaders",
            lambda e: ~e["estimate"].isin(estimates),
            f"leaders[].estimate: not one of {', '.join(estimates)}",
        ),
        Check(
            "schema_mismatch",
            rec["failure"].isNotNull() & ~rec["failure"]["reason"].isin(reasons),
            _lit(f"failure.reason: not one of {', '.join(reasons)}"),
        ),
    ]
    return checks


def _rate_checks() -> list[Check | ElementCheck]:
    from pyspark.sql import functions as F

    rec = F.col("record")
    checks: list[Check | ElementCheck] = [
        ElementCheck(
            "invalid_rate",
            "leaders",
            _on_field(n, _bad_rate),
            f"leaders[].{n}: negative, NaN or infinite",
        )
        for n in RATE_FIELDS
    ]
    checks += [
        Check(
            "invalid_rate",
            _bad_rate(rec["totals"][n]),
            _lit(f"totals.{n}: negative, NaN or infinite"),
        )
        for n in RATE_FIELDS
    ]
    checks.append(
        Check(
            "invalid_rate",
            _bad_rate(rec["rate_window_s"]),
            _lit("rate_window_s: negative, NaN or infinite"),
        )
    )
    return checks
