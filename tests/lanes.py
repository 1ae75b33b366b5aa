"""The order the test modules are handed out in when the suite runs in two lanes, as `make test`
runs it (``pytest -n 2 --dist loadfile --no-loadscope-reorder``: a whole module to a lane, the
next module to whichever lane runs short): longest first, so the two lanes end near each other,
and the unit tests last, where they fill the lane that ends first. Without xdist nothing
changes: the order is pytest's.

The order is each module's wall seconds in one lane (docs/testing.md); a module not listed is
short and keeps its place after the listed ones, in the order the paths were given.
"""

from __future__ import annotations

import os

import pytest

LONGEST_FIRST = (
    "tests/e2e/test_manager_failover.py",
    "tests/e2e/test_manager_heals.py",
    # Its setup builds the image: about 200 s in a podman store without it, seconds after.
    "tests/integration/test_image.py",
    "tests/integration/test_benchmarks.py",
    "tests/integration/test_network_faults.py",
    "tests/e2e/test_soak_short.py",
    "tests/integration/test_streaming_restart.py",
    "tests/integration/test_manager_outage.py",
    "tests/integration/test_controller_quorum.py",
    "tests/e2e/test_secure_cluster.py",
    "tests/integration/test_stream_on_spark_cluster.py",
    "tests/integration/test_operator_requests.py",
    "tests/integration/test_heal_without_loads.py",
    "tests/integration/test_kafka_41.py",
)


def _rank(item: pytest.Item) -> int:
    module = item.nodeid.split("::", 1)[0]
    return LONGEST_FIRST.index(module) if module in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # xdist's workers collect (the process that hands the modules out does not), and each
    # carries this variable; every worker sorts the same collection the same way.
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    items.sort(key=_rank)  # stable: a module's tests keep their order
