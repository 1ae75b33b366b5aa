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


LEAVES = [
    (path, parser)
    for path, parser in commands(build_parser())
    if not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
]
# One meaning per flag name: where a name appears, it takes the same kind of value.
ONE_MEANING = {
    "--wait": ("SECONDS", float),  # a request's wait (the feeds' catch-up is --feeds-wait)
    "--feeds-wait": ("SECONDS", float),
    "--dir": (None, None),  # a work directory, whatever the command (not --workdir)
}
RETIRED = {"--workdir"}


def test_one_name_has_one_meaning_on_every_command() -> None:
    seen: dict[str, set[tuple[str, ...]]] = {}
    kinds: dict[str, dict[tuple[object, object], list[str]]] = {}
    for path, parser in LEAVES:
        for action in parser._actions:
            for flag in action.option_strings:
                seen.setdefault(flag, set()).add(path)
                assert flag not in RETIRED, (path, flag)
                metavar, kind = ONE_MEANING.get(flag, (None, None))
                if metavar is not None:
                    assert (action.metavar, action.type) == (metavar, kind), (path, flag)
                shape = (action.type, action.metavar)
                kinds.setdefault(flag, {}).setdefault(shape, []).append(" ".join(path))
    # Every flag, named or not above, takes one kind of value wherever it appears (it was
    # `--brokers`: a count on `cluster up`, a list on `domains create`; `--config` a Path on
    # most commands, a string on two).
    mixed = {flag: shapes for flag, shapes in kinds.items() if len(shapes) > 1}
    assert not mixed, mixed
    assert ("drain",) in seen["--wait"] and ("topics", "set-rf") in seen["--wait"]
    assert {("snapshot",), ("readiness",)} <= seen["--feeds-wait"]
    assert ("soak",) in seen["--dir"] and ("cluster", "status") in seen["--dir"]


@pytest.mark.parametrize(("path", "parser"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
def test_global_flags_are_taken_after_the_command_too(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    """`kmedic plan --snapshot F --log-level DEBUG` (it was a usage error: global flags only
    before the command)."""
    required: list[str] = []
    for action in parser._actions:
        if action.required and action.dest not in ("command", "verb"):
            value = {"brokers": "1", "broker": "1", "rf": "3"}.get(action.dest, "x")
            required += [value] if not action.option_strings else [action.option_strings[0], value]
    if path == ("cluster", "exec"):  # everything after it is the command to run
        return
    args = build_parser().parse_args([*path, *required, "--log-level", "debug", "--log-json"])
    assert (args.log_level, args.log_json) == ("DEBUG", True)
    before = build_parser().parse_args(["--log-level", "warning", *path, *required])
    assert (before.log_level, before.log_json) == ("WARNING", None)


def test_a_groups_flag_is_taken_after_its_action_too() -> None:
    """`kmedic cluster status --dir X` as well as `kmedic cluster --dir X status`."""
    parser = build_parser()
    assert str(parser.parse_args(["cluster", "status", "--dir", "/x"]).dir) == "/x"
    assert str(parser.parse_args(["cluster", "--dir", "/x", "status"]).dir) == "/x"
    assert parser.parse_args(["cluster", "status"]).dir is None
