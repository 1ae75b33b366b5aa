"""What every cycle says about the placement as it is (BookKeeper's auditor's report)."""

from __future__ import annotations

from manager.analyzer.examples import examples
from manager.analyzer.placement_check import check_existing
from manager.analyzer.placement_state import ClusterState
from manager.model.decision import Reason


def placement_reasons(state: ClusterState) -> tuple[tuple[Reason, ...], int]:
    """Existing placement violations, reported every cycle, and how many there are."""
    problems = check_existing(state)
    if not problems:
        return (), 0
    shown = examples(problems, sep="; ", more="; and {} more")
    told = Reason("placement_violation", f"{len(problems)} placement policy violations: {shown}")
    return (told,), len(problems)
