"""``kmedic healthcheck``: asks a running role (PID 1 in a container) whether it is healthy.

Which role, and where it listens, come from the role's own command line (PID 1 in a container;
``--pid`` for another process) and the config file it names, read with the same environment
overrides the role got: the agent and the stream serve ``/metrics`` on ``metrics_port``, the
manager ``/healthz`` on ``http.port``. A 200 is healthy (an agent's only while Kafka
acknowledges its records: within three sampling intervals, once it has run that long); the
manager's 503 is not (its body says why).

One rule for every role and every web config: the scheme is the role's (https exactly when its
web-config file has ``tls_server_config``), and healthy means the role's own health answer,
read with the credentials the operator names (``--credentials FILE`` or
``KMEDIC_HEALTHCHECK_CREDENTIALS``: ``username``, ``password``, and for a role that requires
client certificates ``cert_file`` and ``key_file``). A 401 is never healthy: "it asked for a
password" says nothing of the role's health (a manager answering 503 behind basic auth was
called healthy). Exit 0 when healthy, 3 when it answers unhealthy or its answer cannot be read
(a 401), 5 when it does not answer (kmedic.exits), with one line each way.
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from kmedic.config import load_model_file
from kmedic.errors import ConfigError, KmedicError
from kmedic.exits import Exit
from kmedic.web_config import WebConfig, load_web_config

ROLES = ("agent", "stream", "manager")
CREDENTIALS_ENV = "KMEDIC_HEALTHCHECK_CREDENTIALS"


@dataclass(frozen=True)
class Target:
    role: str
    url: str
    # An agent is healthy while Kafka acknowledges its records: not after this long without
    # one (three sampling intervals), once it has run that long. None: the answer says it all.
    deliver_within_s: float | None = None
    # The role's endpoints want a user and password (its web config's basic_auth_users).
    wants_password: bool = False


class Credentials(BaseModel):
    """What the check presents to a role whose web config protects its endpoints: a user of
    its ``basic_auth_users`` with the password in clear, and a client certificate where the
    role requires one. A file of the operator's, readable by the check alone."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    username: str | None = None
    password: str | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    def header(self) -> dict[str, str]:
        if self.username is None:
            return {}
        pair = f"{self.username}:{self.password or ''}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


def load_credentials(path: Path) -> Credentials:
    """The credentials file at ``path``, or a ConfigError naming the file and the field."""
    found = load_model_file(Credentials, path, "credentials")
    if (found.username is None) != (found.password is None):
        raise ConfigError(f"{path}: username and password go together")
    if (found.cert_file is None) != (found.key_file is None):
        raise ConfigError(f"{path}: cert_file and key_file go together")
    return found


# The agent's metric that says when Kafka last acknowledged one of its records.
LAST_DELIVERY = "kmedic_agent_last_delivery_timestamp_seconds"


def role_of(argv: list[str], cwd: Path | None = None) -> tuple[str, Path | None]:
    """The role a kmedic command line runs, and its ``--config`` file: a relative path is the
    role's, read against ``cwd``, the role's working directory (it was read against the
    check's own, which in a container or a systemd unit is not the role's)."""
    role = next((a for a in argv if a in ROLES), None)
    if role is None:
        raise KmedicError(f"not a kmedic role process: {' '.join(argv) or '(empty)'}")
    config: Path | None = None
    for i, arg in enumerate(argv):
        if arg == "--config" and i + 1 < len(argv):
            config = Path(argv[i + 1])
        elif arg.startswith("--config="):
            config = Path(arg.removeprefix("--config="))
    if config is not None and cwd is not None and not config.is_absolute():
        config = cwd / config
    return role, config


def target_of(role: str, config: Path | None, cwd: Path | None = None) -> Target:
    """Where the role's endpoint is, from its config and its web-config file (a relative path
    read against ``cwd``, the role's working directory, as the role reads it)."""
    if role == "manager":
        from manager.config import load_manager_config

        http = load_manager_config(config).http
        web = _web(http.web_config_file, cwd)
        url = _url(web, http.host, http.port, "/healthz", "http.port")
        return Target(role, url, wants_password=bool(web.basic_auth_users))
    if role == "agent":
        from agent.config import load_agent_config

        agent = load_agent_config(config)
        web = _web(agent.web_config_file, cwd)
        url = _url(web, agent.metrics_host, agent.metrics_port, "/metrics")
        return Target(
            role,
            url,
            deliver_within_s=3 * agent.interval_s,
            wants_password=bool(web.basic_auth_users),
        )
    from streaming.config import load_stream_config

    stream = load_stream_config(config)
    web = _web(stream.web_config_file, cwd)
    url = _url(web, stream.metrics_host, stream.metrics_port, "/metrics")
    return Target(role, url, wants_password=bool(web.basic_auth_users))


def _web(path: Path | None, cwd: Path | None) -> WebConfig:
    if path is None:
        return WebConfig()
    if cwd is not None and not path.is_absolute():
        path = cwd / path
    return load_web_config(path)


def _url(web: WebConfig, host: str, port: int | None, path: str, key: str = "metrics_port") -> str:
    if not port:
        raise KmedicError(f"{key} is {port}: the role serves no endpoint to check")
    host = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
    scheme = "https" if web.tls_server_config is not None else "http"
    return f"{scheme}://{host}:{port}{path}"


def probe(
    target: Target,
    timeout_s: float,
    *,
    running_s: float = 0.0,
    now: float | None = None,
    credentials: Credentials | None = None,
) -> tuple[Exit, str]:
    """(OK when healthy, NOT_DONE when it answers unhealthy or will not answer without the
    right password, UNREACHABLE when it does not answer; one line). ``running_s``: how long
    the role has run (an agent's first records are not due before ``deliver_within_s``)."""
    creds = credentials or Credentials()
    context = None
    if target.url.startswith("https"):
        # The role's own certificate is for its clients' names, not for a check from inside.
        context = ssl._create_unverified_context()
        if creds.cert_file is not None and creds.key_file is not None:
            try:
                context.load_cert_chain(creds.cert_file, creds.key_file)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(
                    f"the check's client certificate {creds.cert_file}: {exc}"
                ) from exc
    request = urllib.request.Request(target.url, headers=creds.header())
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as reply:
            body = reply.read().decode(errors="replace")
            late = undelivered(target, body, running_s, time.time() if now is None else now)
            if late is not None:
                return Exit.NOT_DONE, f"{target.role} unhealthy: {late}"
            return Exit.OK, f"{target.role} healthy ({target.url} answered {reply.status})"
    except urllib.error.HTTPError as err:
        if err.code == 401:
            return Exit.NOT_DONE, f"{target.role} health unknown: {_refused(target, creds)}"
        body = err.read().decode(errors="replace").strip().replace("\n", " ")[:300]
        return Exit.NOT_DONE, f"{target.role} unhealthy: {target.url} answered {err.code} {body}"
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return Exit.UNREACHABLE, f"{target.role} unhealthy: {target.url} unreachable ({reason})"


def _refused(target: Target, creds: Credentials) -> str:
    if creds.username is None:
        return (
            f"{target.url} wants a password (its web config's basic_auth_users); name a "
            f"credentials file with --credentials or {CREDENTIALS_ENV}"
        )
    return f"{target.url} refused user {creds.username!r} (401): a wrong password?"


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "healthcheck",
        help="check the running role's health endpoint (the image's HEALTHCHECK)",
        description="Ask the agent's, stream's or manager's own endpoint whether it is healthy; "
        "the role and its config are read from the role process's command line. Exit 0 "
        "healthy, 3 unhealthy, 5 not answering (docs/operations.md, exit codes).",
    )
    parser.add_argument("--pid", type=int, default=1, help="the role's process (default 1)")
    parser.add_argument("--timeout", type=float, default=5.0, metavar="SECONDS")
    parser.add_argument(
        "--credentials",
        type=Path,
        default=None,
        metavar="FILE",
        help="YAML with the username and password (and cert_file, key_file) the check "
        f"presents to a role behind a web config; default: ${CREDENTIALS_ENV}",
    )
    parser.set_defaults(func=run)


def undelivered(target: Target, metrics: str, running_s: float, now: float) -> str | None:
    """Why an agent that answers is not doing its job (None: it is): no record acknowledged
    by Kafka for longer than ``deliver_within_s``, or none at all since it started that long
    ago. It used to be called healthy with 0 samples and Kafka down, for answering at all."""
    bound = target.deliver_within_s
    if bound is None:
        return None
    last = max(
        (float(v) for v in re.findall(rf"^{LAST_DELIVERY}{{[^}}]*}} (\S+)$", metrics, re.M)),
        default=0.0,
    )
    if last > 0 and now - last <= bound:
        return None
    if last <= 0:
        if running_s <= bound:
            return None  # its first records are not due yet
        return f"no record acknowledged by Kafka in the {running_s:.0f} s it has run"
    return f"no record acknowledged by Kafka for {now - last:.0f} s (bound {bound:.0f} s)"


def running_for(pid: int) -> float:
    """How long process ``pid`` has run, from /proc (0 when it cannot be read)."""
    try:
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(
            float(line.split()[1])
            for line in Path("/proc/stat").read_text().splitlines()
            if line.startswith("btime ")
        )
    except (OSError, IndexError, ValueError, StopIteration):
        return 0.0
    return max(0.0, time.time() - (boot + ticks / os.sysconf("SC_CLK_TCK")))


def run(args: argparse.Namespace) -> int:
    try:
        raw = Path(f"/proc/{args.pid}/cmdline").read_bytes()
    except OSError as exc:
        raise KmedicError(f"cannot read the command line of process {args.pid}: {exc}") from exc
    argv = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
    try:
        cwd: Path | None = Path(f"/proc/{args.pid}/cwd").resolve(strict=True)
    except OSError:
        cwd = None  # another user's process: its paths are taken as given
    target = target_of(*role_of(argv, cwd), cwd=cwd)
    named = args.credentials or (
        Path(os.environ[CREDENTIALS_ENV]) if os.environ.get(CREDENTIALS_ENV) else None
    )
    credentials = load_credentials(named) if named is not None else None
    if target.wants_password and credentials is None:
        print(f"{target.role} health unknown: {_refused(target, Credentials())}")
        return Exit.NOT_DONE
    code, line = probe(
        target, args.timeout, running_s=running_for(args.pid), credentials=credentials
    )
    print(line)
    return code
