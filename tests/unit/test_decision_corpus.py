"""Decisions stay byte-identical: every snapshot of the corpus (configs/examples and what the
planner's unit tests decided on) gets exactly the decision recorded for it
(scripts/decision_corpus.py says how the corpus is kept)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from composition.cli import main
from kmedic.exits import Exit

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import decision_corpus

ROWS = list(decision_corpus.entries())


def test_the_corpus_covers_every_kind_of_decision() -> None:
    outcomes = {(json.loads(r["json"])["outcome"], json.loads(r["json"])["kind"]) for r in ROWS}
    assert {("act", "heal"), ("act", "balance"), ("refuse", "heal"), ("wait", "heal")} <= outcomes
    assert {("noop", None), ("refuse", None), ("refuse", "balance")} <= outcomes
    assert any(r["request"] for r in ROWS) and any(r["request_done"] for r in ROWS)
    assert len(ROWS) > 1000


def _acts_on(words: str) -> set[str]:
    return {
        json.loads(r["json"])["outcome"] for r in ROWS if words in json.loads(r["json"])["summary"]
    }


def test_the_corpus_covers_every_goal_and_the_daemons_situations() -> None:
    """Each goal acts somewhere in the corpus; switched off, it would act; and each of the
    daemon's situations shapes some decision (observe mode audits would_act)."""
    for words in ("set_rf", "decommission", "demote slow", "restore writes", "drain", "fill"):
        assert "act" in _acts_on(words), words
    assert any("would act (disabled by policy." in json.loads(r["json"])["summary"] for r in ROWS)
    situations = {json.dumps(r.get("situation"), sort_keys=True) for r in ROWS}
    for situation in decision_corpus.SITUATIONS.values():
        assert json.dumps(situation, sort_keys=True) in situations
    observed = [json.loads(r["json"]) for r in ROWS if r.get("situation") == {"mode": "observe"}]
    assert observed and all(d["summary"].startswith("would act (observe mode)") for d in observed)


def test_every_decision_is_byte_identical() -> None:
    differ = []
    for row in ROWS:
        now = decision_corpus.decided(row)
        if now != {k: row[k] for k in now}:
            differ.append(row["name"])
    assert not differ, f"{len(differ)} of {len(ROWS)} decisions changed: {differ[:10]}"


@pytest.mark.parametrize(
    "row", [r for r in ROWS if "situation" not in r][::100], ids=lambda r: str(r["name"])
)
def test_kmedic_plan_json_prints_the_recorded_decision(
    row: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(row["snapshot"]))
    code = main(["plan", "--snapshot", str(path), "--json"])
    assert capsys.readouterr().out == row["json"] + "\n"
    recorded = json.loads(row["json"])
    expected = Exit.NOT_DONE if recorded["outcome"] == "refuse" else Exit.OK
    if recorded["outcome"] != "refuse" and recorded.get("unhealed"):
        expected = Exit.PARTIAL
    assert code == expected
