"""Every `kmedic` command as the parser knows it, and the least each needs typed to get as far
as its first connection: the exit-code tests (tests/unit/test_exit_codes.py) and the
ZooKeeper-backed matrix (tests/integration/test_zkconfig.py) walk the same list."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from composition.cli import build_parser

# A value each required argument takes (the command must get as far as its first connection).
VALUES = {"brokers": "1", "broker": "1", "rf": "3", "id": "r1", "topics": "t", "primary": "g"}


def leaves(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for name, command in subs[0].choices.items():
        yield from leaves(command, (*path, name))


COMMANDS = list(leaves(build_parser()))


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions for o in a.option_strings}


def required_args(parser: argparse.ArgumentParser) -> list[str]:
    out: list[str] = []
    for action in parser._actions:
        if not action.required or action.dest in ("command", "verb"):
            continue
        value = VALUES.get(action.dest, "x")
        out += [value] if not action.option_strings else [action.option_strings[0], value]
    return out
