"""Starting, probing and stopping the local cluster's JVM processes.

Each node runs in its own session (process group) so a kill reaches every thread it forked.
A pid read back from a state file is trusted only while /proc shows the same command line,
so a recycled pid is never signalled.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kmedic.errors import KmedicError

_PR_SET_PDEATHSIG = 1


# Ports a node listens on are picked below the kernel's ephemeral range: a port from it (what
# binding port 0 gives) may be handed to a client's outgoing connection as its source port
# while the node is stopped, and the node's restart then fails ("Unable to start acceptor for
# PLAINTEXT": a clean clone's run restarted a broker into its own port, taken).
LISTEN_PORTS_FROM = 20_000


def ephemeral_range(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> tuple[int, int]:
    """The kernel's range of ports for outgoing connections (Linux's default when unread)."""
    try:
        low, high = (int(v) for v in Path(path).read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32_768, 60_999


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct free TCP ports below the ephemeral range (else any free ones), held
    open together so none is handed out twice."""
    low, _ = ephemeral_range()
    candidates = list(range(LISTEN_PORTS_FROM, low))
    random.shuffle(candidates)
    socks: list[socket.socket] = []
    try:
        for port in candidates:
            if len(socks) == count:
                break
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                s.bind((host, port))
            except OSError:
                s.close()
                continue
            socks.append(s)
        while len(socks) < count:  # no room below the range: any free port
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _die_with_parent() -> None:
    # Linux only: the JVM gets SIGKILL when the process that started it dies, so a crashed
    # test run cannot leave brokers behind. The signal follows the starting *thread*: start
    # nodes from a thread that lives as long as they should (not from a worker pool).
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def spawn(
    cmd: Sequence[str],
    *,
    log_path: Path,
    env: dict[str, str] | None = None,
    tie_to_parent: bool,
    enter: Callable[[], None] | None = None,
) -> int:
    """Start ``cmd`` detached in its own session with output appended to ``log_path``;
    ``enter`` runs in the child before it execs (e.g. joining a network namespace)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)

    def setup() -> None:
        if tie_to_parent:
            _die_with_parent()
        if enter is not None:
            enter()

    with open(log_path, "ab") as out:
        proc = subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
            preexec_fn=setup if tie_to_parent or enter is not None else None,
        )
    return proc.pid


def cmdline(pid: int) -> str | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.replace(b"\0", b" ").decode(errors="replace")


def is_running(pid: int | None, marker: str) -> bool:
    """True when ``pid`` is alive (not a zombie) and its command line contains ``marker``."""
    if not pid:
        return False
    line = cmdline(pid)
    if line is None or marker not in line:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state != "Z"


def reap(pid: int) -> None:
    """Collect a child's exit status if it is ours, so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def kill(pid: int, marker: str, sig: signal.Signals = signal.SIGKILL) -> None:
    """Signal a node's whole process group, then wait (up to 30 s) until it is gone."""
    if not is_running(pid, marker):
        reap(pid)
        return
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        reap(pid)
        if not is_running(pid, marker):
            return
        time.sleep(0.1)
    if sig != signal.SIGKILL:
        kill(pid, marker, signal.SIGKILL)
        return
    raise KmedicError(f"process {pid} did not exit after SIGKILL")


def wait_until(
    check: Callable[[], bool], *, timeout: float, what: str, log_path: Path | None = None
) -> None:
    """Poll ``check`` until it holds; on timeout, name what never happened and where to look."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    hint = f" (see {log_path})" if log_path else ""
    raise KmedicError(f"timed out after {timeout:.0f}s waiting for {what}{hint}")


# JVMs that live briefly on two shared cores: C1 alone, where C2's compile time costs more
# than its faster code saves, and the serial collector (no GC threads beside the work).
LIGHT_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
# Kafka's own launcher's (kafka-run-class.sh): G1 with a 20 ms pause goal, C2; an option for a
# benchmark that wants the production collector. On two shared cores its pauses were no shorter
# than the serial collector's (docs/local-cluster.md, "Sizing").
SERVER_JVM_OPTIONS = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
)


def java_command(
    *,
    classpath: Sequence[Path],
    main_class: str,
    args: Sequence[str],
    heap_mb: int,
    system_properties: dict[str, str],
    java_agent: str | None = None,
    options: Sequence[str] = (),
    server: bool = False,
) -> list[str]:
    """A capped-heap JVM command line, light (``LIGHT_JVM_OPTIONS``) or, with ``server``, as
    Kafka's launcher starts a node (``SERVER_JVM_OPTIONS``), with ``options`` after them (a
    class-sharing archive, say)."""
    cmd = [
        "java",
        f"-Xmx{heap_mb}m",
        "-Xms32m",
        "-XX:MaxMetaspaceSize=160m",
        "-XX:MaxDirectMemorySize=128m",
        *(SERVER_JVM_OPTIONS if server else LIGHT_JVM_OPTIONS),
        *options,
        "-Xss512k",
        "-Djava.awt.headless=true",
    ]
    cmd += [f"-D{k}={v}" for k, v in system_properties.items()]
    if java_agent:
        cmd.append(f"-javaagent:{java_agent}")
    cmd += ["-cp", os.pathsep.join(str(p) for p in classpath), main_class, *args]
    return cmd
