"""Every command's --help, as a new on-call engineer reads it: it opens with a sentence saying
what the command does, and names no source file and shows no reST markup (those are for the
code's readers, not the operator's)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from composition.cli import build_parser, main

SOURCE_PATH = re.compile(r"\b[\w/]+\.py\b")
REST = re.compile(r"``|:(class|func|mod|meth|attr):`")


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                yield from commands(command, (*path, name))


ALL = [path for path, _ in commands(build_parser())]


def test_there_are_commands_to_check() -> None:
    assert len(ALL) > 40
    assert ("mode",) in ALL and ("groups", "broker", "create") in ALL


@pytest.mark.parametrize("path", ALL, ids=lambda p: " ".join(p) or "kmedic")
def test_every_command_says_what_it_does_in_the_operators_words(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*path, "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    parser = dict(commands(build_parser()))[path]
    assert parser.description, f"kmedic {' '.join(path)} --help has no description"
    assert parser.description in text.replace("\n", " ") or parser.description[:30] in text
    assert not SOURCE_PATH.search(text), SOURCE_PATH.findall(text)
    assert not REST.search(text), text
