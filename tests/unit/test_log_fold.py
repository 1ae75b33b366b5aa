"""kmedic.log_fold: a client library's retries fold to one line per text per window."""

from __future__ import annotations

import logging

from kmedic.log_fold import FoldRepeats


def _record(logger: str, msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(logger, logging.ERROR, __file__, 1, msg, args, None)


def test_retries_fold_to_one_line_per_text_per_window() -> None:
    """Issue 39.10: a manager waiting for Kafka wrote ~800 lines a minute of the same retries."""
    now = [0.0]
    fold = FoldRepeats(window_s=60, clock=lambda: now[0])
    net = "kafka.net.manager"
    passed = []
    for i in range(300):  # three alternating texts, as kafka-python's reconnect loop logs them
        now[0] = i * 0.2
        for msg in ("Connection failed: %s", "Bootstrap not ready; waiting %.2f secs"):
            record = _record(net, msg, f"backoff {i % 7}.{i}" if "%s" in msg else i / 10)
            if fold.filter(record):
                passed.append(record.getMessage())
    assert len(passed) == 2  # 60 s of retries: each text once
    now[0] = 61.0
    again = _record(net, "Connection failed: %s", "backoff 3.1")
    assert fold.filter(again)
    assert again.getMessage().endswith("(and 299 lines like the last one held back)")


def test_a_new_state_passes_at_once_and_kmedic_s_own_events_never_fold() -> None:
    fold = FoldRepeats(window_s=60, clock=lambda: 0.0)
    rdkafka = "manager.monitor.feeds.rdkafka.kmedic.brokerstats"
    assert fold.filter(_record(rdkafka, "FAIL 127.0.0.1:9092: Connection refused"))
    assert not fold.filter(_record(rdkafka, "FAIL 127.0.0.1:9092: Connection refused"))
    assert fold.filter(_record(rdkafka, "FAIL 127.0.0.1:9093: Connection refused"))  # numbers
    assert fold.filter(_record(rdkafka, "Connected to 127.0.0.1:9092"))  # a new state
    own = "manager.daemon.manager"
    assert all(fold.filter(_record(own, "zookeeper_unreachable_at_start")) for _ in range(5))
