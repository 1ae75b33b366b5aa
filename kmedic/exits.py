"""What the `kmedic` command's exit code means: one meaning per number, for every command.

A script or a runbook branches on the number alone, so a number never means two things: a
refusal is not a usage error, and "not done" is not "could not ask". The table is in
docs/operations.md ("Exit codes"); tests/unit/test_exit_codes.py holds every command to it.
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    """Done as asked: a decision to act, a noop or a wait; a request finished; a check clean."""
    ERROR = 1
    """Bad input or a failure kmedic names in one line: a config, a snapshot, a file, a
    request ZooKeeper or Kafka refused."""
    USAGE = 2
    """The command line is wrong (an unknown flag, a missing argument or --zk/--cluster, a
    value out of range or of the wrong form, options that exclude each other)."""
    NOT_DONE = 3
    """Asked and answered "no": a plan refused, a request that could never be met, a loss at
    risk, unsafe topics, ACL problems found, a request not finished within --wait, a role
    unhealthy, a demo or a soak that paged or broke an invariant."""
    PARTIAL = 4
    """Partly done: a heal that places what it can and leaves named partitions unhealed."""
    UNREACHABLE = 5
    """A service the command needs did not answer: Kafka, ZooKeeper, an exporter, a role."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C (128 + SIGINT, as a shell reports it)."""
