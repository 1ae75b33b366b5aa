"""The broker's process as its agent sees it (agent.process): Kafka's BrokerState and log
recovery off the exporter's page, the listener, and the restarts it saw."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.process import ProcessGauges, ProcessWatch, read_gauges

STARTING_PAGE = """\
# HELP kafka_server_kafkaserver_brokerstate Attribute exposed for management
# TYPE kafka_server_kafkaserver_brokerstate gauge
kafka_server_kafkaserver_brokerstate 2.0
# TYPE kafka_log_logmanager_remaininglogstorecover gauge
kafka_log_logmanager_remaininglogstorecover{dir="/data/a",thread="",} 120.0
kafka_log_logmanager_remaininglogstorecover{dir="/data/b",thread="",} 30.0
# TYPE kafka_log_logmanager_remainingsegmentstorecover gauge
kafka_log_logmanager_remainingsegmentstorecover{dir="/data/a",thread="0",} 400.0
kafka_log_logmanager_remainingsegmentstorecover{dir="/data/a",thread="1",} 250.0
jvm_threads_current 40.0
"""


def test_a_starting_brokers_page_says_it_recovers_and_how_much_is_left() -> None:
    gauges = read_gauges(STARTING_PAGE)
    assert gauges == ProcessGauges(broker_state=2, logs_to_recover=150, segments_to_recover=650)
    view = ProcessWatch().observe(1_000, gauges, listening=False)
    assert (view.state, view.logs_to_recover, view.segments_to_recover) == ("recovering", 150, 650)
    assert view.listening is False and view.down_since_ms is None and view.restarts == 0


def test_a_page_without_the_gauges_says_nothing_of_them() -> None:
    assert read_gauges("jvm_threads_current 40.0\n") == ProcessGauges()
    assert read_gauges("kafka_server_kafkaserver_brokerstate NaNx\n") == ProcessGauges()
    running = read_gauges("kafka_server_kafkaserver_brokerstate 3.0\n")
    assert ProcessWatch().observe(0, running, listening=True).state == "running"
    # A state Kafka may add later is not guessed at.
    odd = read_gauges("kafka_server_kafkaserver_brokerstate 42.0\n")
    assert ProcessWatch().observe(0, odd, listening=True).state == "unknown"


def test_gone_then_back_is_one_restart_and_the_spell_is_dated_from_its_first_sample() -> None:
    watch = ProcessWatch(window_s=600)
    running = ProcessGauges(broker_state=3)
    assert watch.observe(0, running, True).state == "running"
    gone = watch.observe(5_000, None, False)
    assert (gone.state, gone.down_since_ms, gone.restarts) == ("not_running", 5_000, 0)
    assert watch.observe(10_000, None, False).down_since_ms == 5_000  # the spell's start
    # Neither answers nor fails to: nothing is known, nothing changes.
    assert watch.observe(12_000, None, None).state == "unknown"
    back = watch.observe(15_000, ProcessGauges(broker_state=1), False)
    assert (back.state, back.down_since_ms, back.restarts) == ("starting", None, 1)
    assert watch.observe(20_000, running, True).restarts == 1  # one return, told once
    # The window forgets it.
    assert watch.observe(15_000 + 600_001, running, True).restarts == 0


def test_a_listener_up_with_no_exporter_is_not_taken_for_a_process_gone() -> None:
    assert ProcessWatch().observe(0, None, True).state == "unknown"
    assert ProcessWatch().observe(0, None, None).state == "unknown"


def test_a_start_whose_page_comes_and_goes_without_its_state_is_no_comeback() -> None:
    """A start held by its controllers: its exporter's page answers without its BrokerState,
    and times out now and then on a loaded host (then neither page nor listener answers: it
    looks gone). Those flaps are no comebacks; the state Kafka reports, when it comes, is one
    (bench_oracle's smoke: counting each flap told a held start crash_looping)."""
    watch = ProcessWatch(window_s=600)
    assert watch.observe(0, None, False).state == "not_running"
    for at in range(5_000, 40_000, 10_000):
        assert watch.observe(at, ProcessGauges(), False).state == "unknown"
        assert watch.observe(at + 5_000, None, False).state == "not_running"
    back = watch.observe(45_000, ProcessGauges(broker_state=1), False)
    assert (back.state, back.restarts) == ("starting", 1)


@given(st.lists(st.sampled_from(["gone", "page", "starting", "running", "silent"]), max_size=40))
def test_restarts_count_every_return_from_gone(seen: list[str]) -> None:
    watch = ProcessWatch(window_s=10_000)
    states = {
        "gone": (None, False),
        "starting": (ProcessGauges(broker_state=1), False),
        "running": (ProcessGauges(broker_state=3), True),
        "page": (ProcessGauges(), False),  # a JVM seconds old: its state not on the page yet
        "silent": (None, None),
    }
    returns, last = 0, None
    for i, what in enumerate(seen):
        gauges, listening = states[what]
        view = watch.observe(i * 1_000, gauges, listening)
        if what in ("starting", "running") and last == "gone":
            returns += 1
        if what not in ("silent", "page"):  # no state seen: nothing known changes
            last = what
        assert view.restarts == returns
        assert (view.down_since_ms is not None) == (view.state == "not_running")


def test_a_start_is_dated_by_its_last_step_forward() -> None:
    watch = ProcessWatch()
    assert watch.observe(0, None, False).progress_ms is None  # gone: no start under way
    assert watch.observe(5_000, ProcessGauges(broker_state=1), False).progress_ms == 5_000
    assert watch.observe(10_000, ProcessGauges(broker_state=1), False).progress_ms == 5_000
    recovering = ProcessGauges(broker_state=2, logs_to_recover=9, segments_to_recover=80)
    assert watch.observe(15_000, recovering, False).progress_ms == 15_000  # the state moved
    assert watch.observe(20_000, recovering, False).progress_ms == 15_000  # nothing left fell
    fewer = ProcessGauges(broker_state=2, logs_to_recover=9, segments_to_recover=60)
    assert watch.observe(25_000, fewer, False).progress_ms == 25_000
    assert watch.observe(30_000, ProcessGauges(broker_state=3), True).progress_ms is None
