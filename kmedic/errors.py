"""The one exception type users see: its message names the problem, never a traceback."""


class KmedicError(Exception):
    """A failure worth a clear sentence: bad input, bad config, an unreachable service."""


class Unreachable(KmedicError):
    """A service did not answer: Kafka, ZooKeeper, an exporter, a role's endpoint. The message
    names the address; the command exits ``Exit.UNREACHABLE`` (kmedic.exits)."""


class UsageError(KmedicError):
    """The command line is wrong in a way argparse cannot see (two options that exclude each
    other); the command exits ``Exit.USAGE`` (kmedic.exits)."""


class Refused(KmedicError):
    """Asked, and the answer is no, before anything was done (a request that could never be
    met); the command exits ``Exit.NOT_DONE`` (kmedic.exits)."""


class LeaseEnded(KmedicError):
    """A write was not sent because this instance's lease to act had run out: nothing was
    done, and nothing failed - the next leader does it. Not an action's failure to audit."""


class ConfigError(KmedicError):
    """A configuration file or value is invalid; the message names the field."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type's name when it has none. A py4j
    error carries the whole Java stack trace; one line of it is what a log field or a user
    needs."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
