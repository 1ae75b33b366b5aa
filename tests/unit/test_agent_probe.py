"""The agent's probe of its broker (agent/probe.py): due every PROBE_EVERY_S, percentiles of
what was measured since the last sample, a failed probe counted as its whole timeout."""

from __future__ import annotations

from agent.admin import AdminApiError
from agent.probe import PROBE_EVERY_S, Prober, percentile


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_percentiles_are_nearest_rank() -> None:
    ms = [float(x) for x in range(1, 11)]
    assert percentile(ms, 0.5) == 5.0 and percentile(ms, 0.9) == 9.0
    assert percentile(ms, 1.0) == 10.0 and percentile([7.0], 0.9) == 7.0


def test_probes_are_spaced_and_taken_once() -> None:
    clock, answers = Clock(), iter([3.0, 1.0, 2.0, 250.0])
    prober = Prober(lambda timeout_s: next(answers), timeout_s=1.0, clock=clock)
    for _ in range(4):
        prober.probe_if_due()
        prober.probe_if_due()  # not due again at the same instant
        clock.now += PROBE_EVERY_S
    latency = prober.take(produce_local_ms=4.0, log_flush_ms=None)
    assert latency.probe_count == 4 and latency.probe_failures == 0
    assert (latency.probe_p50_ms, latency.probe_p90_ms, latency.probe_max_ms) == (2.0, 250.0, 250.0)
    assert latency.produce_local_ms == 4.0 and latency.log_flush_ms is None
    empty = prober.take()
    assert empty.probe_count == 0 and empty.probe_p90_ms is None


def test_a_failed_probe_counts_as_its_timeout() -> None:
    clock = Clock()

    def refuse(timeout_s: float) -> float:
        raise AdminApiError("no answer")

    prober = Prober(refuse, timeout_s=0.5, clock=clock)
    prober.probe_if_due()
    latency = prober.take()
    assert latency.probe_count == 1 and latency.probe_failures == 1
    assert latency.probe_p90_ms == 500.0
