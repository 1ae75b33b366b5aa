"""The drains' cordons: the rule (which brokers a drain or decommission holds cordoned), the
leader keeping Kafka's cordon as the rule says (audited once per change, never a cordon set by
hand, never on a Kafka that does not know it, only while writing), and the planner sending a
held broker nothing, a done drain served again when its broker holds replicas again."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from manager_fakes import NOW_MS, Rig

from kmedic.errors import KmedicError, LeaseEnded
from manager.coordination.cordon_ledger import LedgerEntry
from manager.coordination.request_store import RequestState, StoredRequest
from manager.daemon.cordoning import CordonKeeper
from manager.daemon.mode import ModeTracker
from manager.executor.cordons import Cordon
from manager.model.cordons import cordon_intents, held_cordoned
from manager.model.snapshot import RequestKind
from manager.web.status_page import render_html

STATES: tuple[RequestState, ...] = ("pending", "running", "done", "partial", "failed", "cancelled")


def _request(
    kind: RequestKind, *brokers: int, state: RequestState = "pending", at: int = 0
) -> StoredRequest:
    return StoredRequest(
        id=f"req-{at:010d}",
        kind=kind,
        brokers=brokers,
        state=state,
        created_ms=NOW_MS - 60_000 + at,
        by="op@host",
        updated_ms=NOW_MS - 60_000 + at,
        note="",
        version=0,
    )


# -- the rule ---------------------------------------------------------------------------------


def test_a_drain_holds_its_brokers_while_it_runs_and_after_it_is_done() -> None:
    for state in ("pending", "running", "done", "partial"):
        assert held_cordoned([_request("drain", 3, 4, state=state)]) == {3, 4}, state


def test_a_cancelled_or_failed_drain_holds_nothing_and_the_one_before_holds_again() -> None:
    for state in ("cancelled", "failed"):
        intents = cordon_intents([_request("drain", 4, state=state)])
        assert not intents[4].held and intents[4].request is None, state
    earlier = _request("drain", 4, state="done", at=1)
    later = _request("drain", 4, state="cancelled", at=2)
    assert held_cordoned([earlier, later]) == {4}
    assert cordon_intents([earlier, later])[4].request == earlier.id


def test_a_fill_takes_a_drained_broker_back() -> None:
    drained = _request("drain", 3, 4, state="done", at=1)
    filled = _request("fill", 4, state="pending", at=2)
    intents = cordon_intents([drained, filled])
    assert held_cordoned([drained, filled]) == {3}
    assert intents[4].request == filled.id and "asks for load on it" in intents[4].said
    # A drain after the fill holds it again.
    again = _request("drain", 4, at=3)
    assert held_cordoned([drained, filled, again]) == {3, 4}


def test_a_decommission_holds_until_done_and_a_broker_registering_again_is_new() -> None:
    for state in ("pending", "running", "partial"):
        assert held_cordoned([_request("decommission", 5, state=state)]) == {5}, state
    intents = cordon_intents([_request("decommission", 5, state="done")])
    assert not intents[5].held and "registers again is new" in intents[5].said


def test_only_brokers_a_drain_or_decommission_named_have_an_intent() -> None:
    requests = [_request("fill", 1), _request("demote", 2, at=1), _request("drain", 3, at=2)]
    assert set(cordon_intents(requests)) == {3}


@given(
    st.lists(
        st.tuples(
            st.sampled_from(("drain", "decommission", "fill", "demote")),
            st.sampled_from(STATES),
            st.sets(st.integers(1, 4), min_size=1),
        ),
        max_size=8,
    )
)
def test_the_newest_standing_request_decides_each_broker(
    drawn: list[tuple[RequestKind, RequestState, set[int]]],
) -> None:
    requests = [
        _request(kind, *sorted(brokers), state=state, at=i)
        for i, (kind, state, brokers) in enumerate(drawn)
    ]
    intents = cordon_intents(requests)
    for broker in range(1, 5):
        naming = [r for r in requests if broker in r.brokers and r.kind != "demote"]
        if not any(r.kind in ("drain", "decommission") for r in naming):
            assert broker not in intents
            continue
        standing = [r for r in naming if r.state not in ("cancelled", "failed")]
        newest = standing[-1] if standing else None
        held = newest is not None and (
            newest.kind == "drain" or (newest.kind == "decommission" and newest.state != "done")
        )
        assert intents[broker].held == held
        assert intents[broker].request == (newest.id if newest else None)


# -- the leader keeps Kafka's cordon ------------------------------------------------------------


def _cordon_records(rig: Rig) -> list[str]:
    return [r.summary for r in rig.sink.records if "cordon" in r.summary]


def test_the_leader_cordons_a_draining_broker_once_and_uncordons_it_on_cancel(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    drain = _request("drain", 4)
    rig.coordinator.open_requests = (drain,)
    rig.manager.cycle()
    assert rig.executor.cordons.writes == [(4, True)]
    (told,) = _cordon_records(rig)
    assert told.startswith("cordoned broker 4: Kafka places no new partition on it (request ")
    record = next(r for r in rig.sink.records if r.summary == told)
    assert record.kind == "action_completed"
    assert record.details == {"broker": 4, "cordoned": True, "request": drain.id}
    # Settled: the next cycles neither read nor write it again.
    reads = len(rig.executor.cordons.reads)
    rig.manager.cycle()
    assert len(rig.executor.cordons.reads) == reads and len(rig.executor.cordons.writes) == 1
    # Cancelled: uncordoned, audited.
    rig.coordinator.open_requests = (replace(drain, state="cancelled"),)
    rig.manager.cycle()
    assert rig.executor.cordons.writes == [(4, True), (4, False)]
    assert _cordon_records(rig)[-1] == (
        "uncordoned broker 4: every drain or decommission naming it was cancelled or failed"
    )


def test_a_cordon_set_by_hand_is_left_as_it_is_and_said_once(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.executor.cordons.values[4] = "/data/a"
    rig.coordinator.open_requests = (_request("drain", 4),)
    rig.manager.cycle()
    rig.manager.cycle()
    assert rig.executor.cordons.writes == []
    (told,) = _cordon_records(rig)
    assert "cordoned.log.dirs=/data/a set by hand: kmedic leaves it as it is" in told
    # Cancelled: a cordon kmedic did not write (not "*") is not removed either.
    rig.coordinator.open_requests = (_request("drain", 4, state="cancelled"),)
    rig.manager.cycle()
    assert rig.executor.cordons.writes == [] and rig.executor.cordons.values[4] == "/data/a"


def test_an_operators_whole_cordon_outlives_the_drain_a_fill_and_a_cancel(
    tmp_path: Path,
) -> None:
    """Issue 71.7: an operator's `*` set before the drain was deleted by a fill or a cancel:
    kmedic could not tell its own cordon from an operator's. It removes only what its ledger
    says it wrote, and the broker stays cordoned for the planner too."""
    rig = Rig(tmp_path)
    rig.executor.cordons.values[4] = "*"  # by hand, before the drain
    rig.sources.cordoned = {4}  # as its agent reads it
    drain = _request("drain", 4, at=1)
    rig.coordinator.open_requests = (drain,)
    rig.manager.cycle()
    assert rig.executor.cordons.writes == [] and rig.coordinator.cordon_ledger.owned == {}
    (told,) = _cordon_records(rig)
    assert "cordoned.log.dirs=* set by hand: kmedic leaves it as it is (and never removes" in told
    for ended in (replace(drain, state="cancelled"), _request("fill", 4, at=2)):
        rig.coordinator.open_requests = (drain, ended) if ended.kind == "fill" else (ended,)
        rig.manager.cycle()
        assert rig.executor.cordons.writes == [] and rig.executor.cordons.values[4] == "*"
        snap = rig.manager.last_snapshot
        assert snap is not None and [b.id for b in snap.brokers if b.cordoned] == [4]
    assert any("kmedic did not set that cordon" in s for s in _cordon_records(rig))
    # Shown, with who set it, on the status page (and /api/v1/cordons, which serves it).
    by = "not kmedic (an operator, or Kafka's config)"
    assert rig.manager.status()["cordons"] == [{"broker": 4, "by": by}]
    assert "Cordoned brokers" in render_html(rig.manager.status())


def test_kmedics_own_cordon_is_in_its_ledger_and_a_new_leader_removes_it(tmp_path: Path) -> None:
    """The ledger outlives a leader: the next one removes the cordon its predecessor wrote,
    and a ledger it cannot read changes no cordon."""
    rig = Rig(tmp_path)
    drain = _request("drain", 4)
    rig.coordinator.open_requests = (drain,)
    rig.manager.cycle()
    assert set(rig.coordinator.cordon_ledger.owned) == {4}
    assert rig.coordinator.cordon_ledger.owned[4].request == drain.id
    assert rig.manager.requests.cordons.by_whom(4) == f"kmedic ({drain.id})"
    rig.sources.cordoned = {4}  # the agent reads it next
    rig.manager.cycle()
    assert rig.manager.status()["cordons"] == [{"broker": 4, "by": f"kmedic ({drain.id})"}]
    rig.coordinator.epoch += 1  # another leader; it reads the ledger again
    rig.coordinator.cordon_ledger.refusal = "ZooKeeper unreachable"
    rig.coordinator.open_requests = (replace(drain, state="cancelled"),)
    rig.manager.cycle()
    assert rig.executor.cordons.writes == [(4, True)]
    assert any(
        r.kind == "action_failed" and "cannot read the cordons" in r.summary
        for r in rig.sink.records
    )
    rig.coordinator.cordon_ledger.refusal = None
    rig.manager.cycle()
    assert rig.executor.cordons.writes == [(4, True), (4, False)]
    assert rig.coordinator.cordon_ledger.owned == {}


def test_a_kafka_without_cordons_is_never_written_and_said_once(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.executor.cordons.supported = False
    rig.coordinator.open_requests = (_request("drain", 4),)
    rig.manager.cycle()
    rig.manager.cycle()
    assert rig.executor.cordons.writes == []
    (told,) = _cordon_records(rig)
    assert told.startswith("broker 4 cannot be cordoned: it does not know cordoned.log.dirs")


def test_a_refused_write_is_audited_once_and_tried_again(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.executor.cordons.refusal = "cannot cordon broker 4: Kafka answered InvalidConfig"
    rig.coordinator.open_requests = (_request("drain", 4),)
    rig.manager.cycle()
    rig.manager.cycle()
    failed = [r for r in rig.sink.records if r.kind == "action_failed"]
    assert len(failed) == 1 and "InvalidConfig; the next cycle tries again" in failed[0].summary
    assert rig.executor.cordons.reads == [4, 4]  # read again each cycle
    rig.executor.cordons.refusal = None
    rig.manager.cycle()
    assert rig.executor.cordons.writes == [(4, True)]


def test_observe_mode_a_standby_and_a_dead_broker_change_no_cordon(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.manager.mode = ModeTracker("observe")
    rig.coordinator.open_requests = (_request("drain", 4),)
    rig.manager.cycle()
    standby = Rig(tmp_path / "standby")
    standby.coordinator.is_leader = False
    standby.coordinator.open_requests = (_request("drain", 4),)
    standby.manager.cycle()
    dead = Rig(tmp_path / "dead")
    dead.sources.dead = {4}
    dead.coordinator.open_requests = (_request("drain", 4),)
    dead.manager.cycle()
    for rig_ in (rig, standby, dead):
        assert rig_.executor.cordons.reads == [] and rig_.executor.cordons.writes == []


def test_a_new_leader_reads_every_broker_again(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.coordinator.open_requests = (_request("drain", 4),)
    rig.manager.cycle()
    del rig.executor.cordons.values[4]  # uncordoned by hand while another instance led
    rig.coordinator.epoch += 1
    rig.manager.cycle()
    assert rig.executor.cordons.writes == [(4, True), (4, True)]


# -- the planner --------------------------------------------------------------------------------


def test_a_held_broker_is_cordoned_in_the_snapshot_and_a_heal_sends_it_nothing(
    tmp_path: Path,
) -> None:
    def heal(held: bool) -> Rig:
        rig = Rig(tmp_path / str(held))
        rig.sources.dead = {1}
        # Broker 4 drained: it holds nothing, and only it could take broker 1's replicas.
        rig.sources.replicas = {("t", 1): (2, 3, 1), ("t", 2): (3, 1, 2)}
        if held:
            rig.coordinator.open_requests = (_request("drain", 4, state="done"),)
        rig.manager.cycle()
        return rig

    assert any(4 in m.target for m in heal(False).executor.submitted)
    rig = heal(True)
    snap = rig.manager.last_snapshot
    assert snap is not None
    assert [b.id for b in snap.brokers if b.cordoned] == [4]
    assert snap.requests == ()  # done, and holding nothing: not served
    assert all(4 not in m.target for m in rig.executor.submitted)


def test_a_done_drain_is_served_again_when_its_broker_holds_replicas_again(
    tmp_path: Path,
) -> None:
    rig = Rig(tmp_path)
    rig.executor.cordons.supported = False  # a Kafka that cannot cordon: a partition landed
    done = _request("drain", 4, state="done")
    rig.coordinator.open_requests = (done,)
    outcome = rig.manager.cycle()
    assert outcome.kind == "act", outcome.sentence
    assert (
        f"request {done.id} (drain brokers 4, done, upheld: its brokers hold replicas again)"
        in outcome.sentence
    )
    assert rig.executor.submitted and all(4 not in m.target for m in rig.executor.submitted)
    assert {m.partition for m in rig.executor.submitted} == {1, 2}  # every replica on 4
    assert rig.coordinator.requests.marked == []  # it stays done


def test_a_done_drain_is_not_served_again_for_a_broker_a_later_request_decides(
    tmp_path: Path,
) -> None:
    """A decommission after the drain holds the broker now: it is served (and runs), not the
    drain before it (a regression: the done drain went first and left it pending)."""
    rig = Rig(tmp_path)
    drained = _request("drain", 4, state="done", at=1)
    leaving = _request("decommission", 4, at=2)
    rig.coordinator.open_requests = (drained, leaving)
    outcome = rig.manager.cycle()
    assert outcome.kind == "act", outcome.sentence
    assert f"request {leaving.id} (decommission brokers 4)" in outcome.sentence
    assert rig.coordinator.requests.marked == [(leaving.id, "running")]


# -- brokers cordoned by hand, as their agents read them ----------------------------------------


def test_a_broker_cordoned_by_hand_receives_nothing(tmp_path: Path) -> None:
    """Every log directory cordoned, as its agent read it (Kafka would refuse a reassignment
    onto it): a heal places elsewhere or refuses, and kmedic changes no cordon it did not set."""
    rig = Rig(tmp_path)
    rig.sources.dead = {1}
    rig.sources.replicas = {("t", 1): (2, 3, 1), ("t", 2): (3, 1, 2)}
    rig.sources.cordoned = {4}
    rig.manager.cycle()
    snap = rig.manager.last_snapshot
    assert snap is not None and [b.id for b in snap.brokers if b.cordoned] == [4]
    assert all(4 not in m.target for m in rig.executor.submitted)
    assert rig.executor.cordons.writes == []


def test_kmedics_word_wins_for_a_broker_a_request_decides(tmp_path: Path) -> None:
    """A fill after a drain: the agent still reads the broker cordoned (it lags a sample), but
    the leader uncordons it before it plans, so the fill's plan may send it replicas."""
    rig = Rig(tmp_path)
    rig.sources.cordoned = {4}
    rig.executor.cordons.values[4] = "*"
    rig.sources.replicas = {("t", 1): (2, 3, 1), ("t", 2): (3, 1, 2)}
    drained = _request("drain", 4, state="done", at=1)
    rig.coordinator.open_requests = (drained, _request("fill", 4, at=2))
    rig.coordinator.cordon_ledger.owned[4] = LedgerEntry(drained.id, 1)  # the drain's cordon
    rig.manager.cycle()
    snap = rig.manager.last_snapshot
    assert snap is not None and not any(b.cordoned for b in snap.brokers)
    assert rig.executor.cordons.writes == [(4, False)]
    assert rig.coordinator.cordon_ledger.owned == {}


class _LeaseGone:
    """The cordons as an instance whose lease just ran out reaches them: every call refused."""

    def read(self, broker: int) -> Any:
        raise LeaseEnded(
            f"cannot read the cordon of broker {broker}: this instance may no longer act"
        )

    def write(self, broker: int, value: bool) -> None:
        raise AssertionError("nothing is written past the lease")


class _Ledger:
    def load(self) -> dict[int, LedgerEntry]:
        return {}

    def save(self, entries: dict[int, LedgerEntry]) -> None:
        raise AssertionError("nothing is saved past the lease")


def test_a_cordon_left_past_the_lease_is_no_failure_to_audit() -> None:
    """Found by the 60-minute soak of seed 7401: a leader whose lease had run out audited
    `action_failed` (cannot set the cordon ... may no longer act) 5.4 s into its cut off
    ZooKeeper - a record of a failure that was none, from an instance that may not act."""
    records: list[tuple[str, str]] = []
    trail = SimpleNamespace(record=lambda kind, summary, **_: records.append((kind, summary)))
    keeper = CordonKeeper(_LeaseGone(), _Ledger(), trail)  # type: ignore[arg-type]
    keeper.follow([_request("fill", 6, state="done")], alive=[6], epoch=3)
    keeper.follow([_request("drain", 6)], alive=[6], epoch=3)
    assert records == []


class _Uncordoned:
    def read(self, broker: int) -> Cordon:
        return Cordon(supported=True, value="")

    def write(self, broker: int, value: bool) -> None:
        raise AssertionError("the ledger first")


class _LedgerLost(_Ledger):
    def save(self, entries: dict[int, LedgerEntry]) -> None:
        raise KmedicError("ZooKeeper unreachable: cannot write the cordon ledger: ConnectionLoss()")


def test_a_cordon_write_that_failed_as_the_lease_ran_out_is_left_to_the_next_leader() -> None:
    """Found by the 60-minute soak of seed 4242: 4 s into a silent drop, the cut leader's
    ledger write failed on ZooKeeper's ConnectionLoss and it audited `action_failed`, its lease
    over. Failed while it may act, the failure is told; once it may not, the next leader's."""
    for leading in (True, False):
        records: list[str] = []
        trail = SimpleNamespace(record=lambda kind, summary, told=records, **_: told.append(kind))
        keeper = CordonKeeper(
            _Uncordoned(),  # type: ignore[arg-type]
            _LedgerLost(),  # type: ignore[arg-type]
            trail,  # type: ignore[arg-type]
            may_act=lambda leading=leading: leading,
        )
        keeper.follow([_request("drain", 4)], alive=[4], epoch=3)
        assert records == (["action_failed"] if leading else [])
