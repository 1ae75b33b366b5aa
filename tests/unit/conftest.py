"""Fixtures for unit tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from spark_helpers import shared_spark, stop_spark


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] SparkSession for transforms on static DataFrames (one per test run)."""
    yield shared_spark()
    stop_spark()
