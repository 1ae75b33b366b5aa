"""The one exception type users see: its message names the problem, never a traceback."""


class KmedicError(Exception):
    """A failure worth a clear sentence: bad input, bad config, an unreachable service."""


class ConfigError(KmedicError):
    """A configuration file or value is invalid; the message names the field."""
