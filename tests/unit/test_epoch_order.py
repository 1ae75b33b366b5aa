"""Audit records put back in their writers' epoch order (manager.audit.epoch_order): a record
an old leader sent within its lease to a hung broker reached the topic after its successor's
(the soak, seed 5150)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from manager.audit.epoch_order import Lateness, in_epoch_order
from manager.audit.log import AuditRecord


def rec(epoch: int, ms: int, cluster: str = "c") -> AuditRecord:
    return AuditRecord(
        cluster=cluster,
        instance=f"m{epoch}",
        epoch=epoch,
        kind="decision",
        summary=f"{epoch}@{ms}",
        time_ms=ms,
    )


def test_a_late_record_goes_back_before_the_newer_epochs_first_record_made_after_it() -> None:
    topic = [rec(5, 1_000), rec(6, 9_000), rec(6, 9_500), rec(5, 4_000), rec(6, 10_000)]
    assert [r.summary for r in in_epoch_order(topic)] == [
        "5@1000",
        "5@4000",
        "6@9000",
        "6@9500",
        "6@10000",
    ]
    late = Lateness()
    assert [late.after(r) for r in topic] == [None, None, None, 6, None]


def test_an_epoch_counted_anew_and_other_clusters_keep_their_places() -> None:
    # The coordination state reset: epoch 1 again, its records made after the old ones.
    topic = [rec(5, 1_000), rec(1, 2_000, "other"), rec(1, 5_000), rec(0, 5_500), rec(2, 6_000)]
    assert in_epoch_order(topic) == topic
    late = Lateness()
    assert [late.after(r) for r in topic] == [None] * 5


@given(st.lists(st.integers(1, 4), min_size=1, max_size=5), st.data())
def test_records_delayed_on_their_way_are_read_in_their_leaders_order(
    counts: list[int], data: st.DataObject
) -> None:
    # Leaders in turn, each record made in its leader's time; some appended late, past records
    # made after them (their own leader's or a successor's).
    made = [rec(e, e * 100 + j) for e, n in enumerate(counts, start=1) for j in range(n)]
    topic = list(made)
    for _ in range(data.draw(st.integers(0, 4))):
        i = data.draw(st.integers(0, len(topic) - 1))
        topic.insert(min(len(topic) - 1, i + data.draw(st.integers(0, 6))), topic.pop(i))
    assert in_epoch_order(topic) == sorted(topic, key=lambda r: r.epoch)
    late = Lateness()
    flagged = [r for r in topic if late.after(r) is not None]
    assert all(any(x.epoch > r.epoch for x in topic[: topic.index(r)]) for r in flagged)
