"""The `kmedic` command: one entry point, one subcommand per role or tool.

Each subcommand lives in its own module exposing ``register(subparsers)``; the module sets
``func`` (args -> exit code, kmedic.exits) on its parser. A KmedicError becomes one clear line
on stderr and ``Exit.ERROR`` (``Exit.UNREACHABLE`` when a service did not answer); argparse's
own usage errors exit ``Exit.USAGE``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from collections.abc import Sequence

from composition.healthcheck import ROLES
from kmedic import __version__, secrets
from kmedic.errors import KmedicError, Refused, Unreachable, UsageError
from kmedic.exits import Exit
from kmedic.heap import keep_freed_memory
from kmedic.logging import LEVELS, log_level, quiet_for_a_tool, setup_logging

# Modules that add subcommands, in the order they appear in --help.
COMMAND_MODULES: tuple[str, ...] = (
    "kmedic.cluster_cli",
    "composition.demo",
    "manager.cli.admin",
    "manager.cli.requests",
    "manager.cli.status",
    "manager.cli.mode",
    "manager.cli.switches",
    "manager.cli.zk_acls",
    "manager.cli.actions",
    "manager.cli.topics",
    "manager.cli.readiness",
    "manager.cli.recover",
    "agent.cli",
    "manager.cli.plan",
    "streaming.cli",
    "manager.cli.daemon",
    "composition.soak.cli",
    "composition.healthcheck",
    # (each role and tool adds its module here)
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kmedic",
        description="Self-healing daemon for Apache Kafka.",
    )
    parser.add_argument("--version", action="version", version=f"kmedic {__version__}")
    add_global_flags(parser, level="INFO", json=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    describe_commands(parser)
    for command in commands(parser):
        # Global flags anywhere: `kmedic plan ... --log-level DEBUG` as well as before it. A
        # command's own copy sets the value only when given there.
        add_global_flags(command, level=argparse.SUPPRESS, json=argparse.SUPPRESS)
    return parser


def add_global_flags(parser: argparse.ArgumentParser, *, level: object, json: object) -> None:
    parser.add_argument(
        "--log-level",
        type=log_level,
        choices=LEVELS,
        default=level,
        help="log level for every component (default INFO)",
    )
    parser.add_argument(
        "--log-json",
        action=argparse.BooleanOptionalAction,
        default=json,
        help="JSON log lines (default: JSON unless stderr is a terminal)",
    )


def commands(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every command and command group under ``parser``."""
    out: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                out += [command, *commands(command)]
    return out


def describe_commands(parser: argparse.ArgumentParser) -> None:
    """Every command's own --help opens with a sentence: its description, or else the line its
    parent's listing shows for it."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        listed = {a.dest: a.help for a in action._choices_actions}
        for name, command in action.choices.items():
            if not command.description and listed.get(name):
                line = str(listed[name])
                end = "" if line.endswith((".", "?", "!")) else "."
                command.description = line[:1].upper() + line[1:] + end
            describe_commands(command)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    keep_freed_memory()  # kmedic.heap: fleet-size cycles reuse their arrays' memory
    setup_logging(args.log_level, json=args.log_json)
    if args.command not in ROLES:  # a role's library warnings belong in its log; a tool's do not
        quiet_for_a_tool()
    try:
        code: int = args.func(args)
    except KmedicError as exc:
        code = Exit.ERROR
        if isinstance(exc, Unreachable):
            code = Exit.UNREACHABLE
        elif isinstance(exc, UsageError):
            code = Exit.USAGE
        elif isinstance(exc, Refused):
            code = Exit.NOT_DONE
        return failed(args, secrets.redact(str(exc)), code)
    except KeyboardInterrupt:
        return failed(args, "interrupted", Exit.INTERRUPTED)
    except Exception as exc:
        # A failure nobody anticipated still gets one line; the traceback goes to the log
        # at DEBUG (run with --log-level DEBUG to see it).
        logging.getLogger(__name__).debug("unexpected failure", exc_info=True)
        text = secrets.redact(str(exc))
        return failed(args, f"unexpected {type(exc).__name__}: {text}", Exit.ERROR)
    return code


def failed(args: argparse.Namespace, message: str, code: Exit) -> Exit:
    """A command that ends in an error says why on stderr, in one line; asked for ``--json``,
    it also prints the error as JSON on stdout, where a script reads its answer."""
    print(f"kmedic: {'error: ' if code != Exit.INTERRUPTED else ''}{message}", file=sys.stderr)
    if getattr(args, "json", False):
        doc = {"error": message, "exit_code": int(code), "exit": code.name.lower()}
        print(json.dumps(doc, sort_keys=True), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
