"""`kmedic soak`: the chaos soak (docs/reliability.md). It starts its own cluster and every
role, runs the seeded schedule under Kafka's verifiable producer and consumer, checks the
invariants, writes ``report.json`` and ``schedule.json`` to its work directory, and exits 0
only when every invariant held. ``--seed`` reproduces a run."""

from __future__ import annotations

import argparse
import random
import signal
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from composition.soak.schedule import draw
from kmedic.cluster_cli import parse_link_mbps
from kmedic.errors import UsageError
from kmedic.exits import Exit

if TYPE_CHECKING:
    from composition.soak.run import SoakSettings

# Runs at least this long get the episode whose page must fire (about 3 minutes of it).
WARRANTED_FROM_MIN = 10.0


def register(sub: Any) -> None:
    p = sub.add_parser("soak", help="the chaos soak: faults under Kafka's verifiable clients")
    p.add_argument("--seed", type=int, default=None, help="the schedule's seed (default: drawn)")
    p.add_argument(
        "--minutes", type=_positive, default=15.0, help="about how long the faults run (default 15)"
    )
    p.add_argument(
        "--stop-after",
        type=_positive,
        default=None,
        metavar="MINUTES",
        help="a time box: start no episode after MINUTES of episodes (one under way finishes); "
        "the report covers the episodes that ran and says how many were drawn",
    )
    p.add_argument(
        "--dir", type=Path, default=None, help="work directory: logs, the schedule and the report"
    )
    p.add_argument(
        "--no-stream", action="store_true", help="leave the Spark job out (a lighter run)"
    )
    p.add_argument(
        "--throughput", type=int, default=200, help="messages per second per topic (default 200)"
    )
    p.add_argument(
        "--ballast-mb",
        type=_not_negative,
        default=8,
        help="MB per partition of a topic the heals must copy, at 1 MB/s (default 8)",
    )
    p.add_argument(
        "--controllers",
        type=int,
        choices=(1, 3),
        default=3,
        help="KRaft controller voters (default 3: the schedule then kills a voter, or the "
        "quorum's leader, in some episodes)",
    )
    p.add_argument(
        "--nic-mbps",
        type=parse_link_mbps,
        default=None,
        metavar="N",
        help="run on a shaped cluster: every node on its own address in a network namespace of "
        "the cluster's own, each broker's link held to N Mbit/s each way; the schedule then "
        "draws the network's faults too (a broker cut off from the controllers, two brokers "
        "cut off from each other, a slow link). Needs root, ip, tc and iptables",
    )
    p.add_argument(
        "--warranted-page",
        choices=("auto", "yes", "no"),
        default="auto",
        help="an episode whose page must fire (two brokers dead, one more than the soak's "
        "max_dead_brokers, for about 3 minutes), second in the schedule; auto: in runs of "
        f"{WARRANTED_FROM_MIN:g} minutes or more",
    )
    p.add_argument(
        "--leader-drop",
        action="store_true",
        help="drop the leading manager's packets to ZooKeeper silently in the second episode "
        "(the warranted page's, which this needs): its session must expire on its own",
    )
    p.add_argument(
        "--audit-outage",
        action="store_true",
        help="end with every broker of the audit topic killed at once, whatever the seed drew",
    )
    p.set_defaults(func=_soak)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a number of minutes; {text!r} is not") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive; {value:g} is not")
    return value


def _not_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number of MB; {text!r} is not") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more; {value} is not")
    return value


def _soak(args: argparse.Namespace) -> int:
    from composition.soak.run import SoakSettings

    # SIGTERM (a `timeout`, a CI runner giving up) ends the run as Ctrl-C does: through the
    # stop that ends every process it started and removes a shaped cluster's namespace.
    signal.signal(signal.SIGTERM, _interrupted)
    warranted = args.warranted_page == "yes" or (
        args.warranted_page == "auto" and args.minutes >= WARRANTED_FROM_MIN
    )
    if args.leader_drop and not warranted:
        raise UsageError(
            "--leader-drop drops the leader's packets in the warranted page's episode: add "
            f"--warranted-page yes (auto gives one only from {WARRANTED_FROM_MIN:g} minutes)"
        )
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="kmedic-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    settings = SoakSettings(
        seed=seed,
        length_s=args.minutes * 60,
        workdir=workdir,
        throughput=args.throughput,
        stream=not args.no_stream,
        ballast_mb=args.ballast_mb,
        audit_outage=args.audit_outage,
        leader_drop=args.leader_drop,
        warranted_page=warranted,
        controllers=args.controllers,
        nic_mbps=args.nic_mbps,
        stop_after_s=None if args.stop_after is None else args.stop_after * 60,
    )
    code, lines = run_soak(settings)
    print("\n".join(lines))
    return code


def run_soak(settings: SoakSettings) -> tuple[int, list[str]]:
    """Run, check, stop; (exit code, the report's lines)."""
    # Here, not at the top: every kmedic process builds the whole command parser, and the
    # rig brings kafka-python, Prometheus' parser and the local cluster (about 0.3 s of CPU).
    from composition.soak.report import finish, stop
    from composition.soak.run import (
        GRACE_S,
        MANAGER_SESSION_S,
        SESSION_TIMEOUT_S,
        run_schedule,
        start,
    )

    schedule = draw(
        settings.seed,
        length_s=settings.length_s,
        brokers=list(range(1, settings.brokers + 1)),
        grace_s=GRACE_S,
        session_timeout_s=SESSION_TIMEOUT_S,
        stream=settings.stream,
        controllers=settings.controllers,
        manager_session_s=MANAGER_SESSION_S,
        network=settings.nic_mbps is not None,
    )
    if settings.warranted_page:
        schedule = schedule.with_warranted_page(GRACE_S)
    if settings.leader_drop:
        # Once the two deaths are past their grace: the cut leader is refusing, and auditing it.
        schedule = schedule.with_leader_drop(MANAGER_SESSION_S, at_s=GRACE_S + 10.0)
    if settings.audit_outage:
        schedule = schedule.with_audit_outage(GRACE_S)
    (settings.workdir / "schedule.json").write_text(schedule.dumps())
    print(f"soak seed {settings.seed} in {settings.workdir}:", flush=True)
    print("\n".join(schedule.lines()), flush=True)
    rig = start(settings)
    left: list[str] = []
    try:
        ran = run_schedule(
            rig,
            schedule,
            lambda n: print(f"episode {n} done", flush=True),
            settings.stop_after_s,
        )
        report = finish(rig, schedule.first(ran))
        report.counts["episodes_drawn"] = len(schedule.episodes)
    finally:
        left = stop(rig)
    lines = report.lines()
    if left:
        lines.append(f"  [BROKEN] no process left behind: {left}")
    report.save(settings.workdir / "report.json")
    lines.append(f"  report: {settings.workdir / 'report.json'}")
    return (Exit.OK if report.held and not left else Exit.NOT_DONE), lines
