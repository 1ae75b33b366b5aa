"""The reason codes are one typed list; the docs' table and the code that gives them agree."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

from manager.model.reasons import REASON_CODES, ReasonCode, markdown_table

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "planner.md"


def test_every_code_in_the_list_is_documented_and_nothing_else() -> None:
    assert list(REASON_CODES) == list(get_args(ReasonCode))


def test_the_docs_table_is_the_generated_one() -> None:
    text = DOC.read_text()
    found = re.search(r"<!-- reason-codes:begin -->\n(.*?)<!-- reason-codes:end -->", text, re.S)
    assert found is not None, "docs/planner.md lost its reason-codes markers"
    assert found.group(1) == markdown_table(), (
        "docs/planner.md is out of date: regenerate with `python -m manager.model.reasons`"
    )


def _string_constants() -> set[str]:
    out: set[str] = set()
    for path in (ROOT / "manager").rglob("*.py"):
        if path.name == "reasons.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.add(node.value)
    return out


def test_every_listed_code_is_given_somewhere() -> None:
    constants = _string_constants()
    assert [code for code in get_args(ReasonCode) if code not in constants] == []
