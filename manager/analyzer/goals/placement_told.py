"""What every cycle says about the placement as it is (BookKeeper's auditor's report)."""

from __future__ import annotations

from manager.analyzer.placement_check import check_existing
from manager.analyzer.placement_state import ClusterState
from manager.model.decision import Reason

MAX_EXAMPLES = 5


def placement_reasons(state: ClusterState) -> tuple[tuple[Reason, ...], int]:
    """Existing placement violations, reported every cycle, and how many there are."""
    problems = check_existing(state)
    if not problems:
        return (), 0
    shown = "; ".join(problems[:MAX_EXAMPLES])
    more = f"; and {len(problems) - MAX_EXAMPLES} more" if len(problems) > MAX_EXAMPLES else ""
    told = Reason(
        "placement_violation", f"{len(problems)} placement policy violations: {shown}{more}"
    )
    return (told,), len(problems)
