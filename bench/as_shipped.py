"""What "as shipped" means for a bench (issue 73): kmedic's default intervals, read from its
own config models, and brokers at Kafka's defaults (ClusterSpec.kafka_defaults). A bench runs
so unless told otherwise, and every departure is named in the header of the table it writes,
so that a figure is never read as a default's when it was not measured at one."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from agent.config import AgentConfig
from manager.config import ManagerConfig

AGENT_INTERVAL_S: float = AgentConfig.model_fields["interval_s"].default
AGENT_BUSY_INTERVAL_S: float = AgentConfig.model_fields["busy_interval_s"].default
MANAGER_INTERVAL_S: float = ManagerConfig.model_fields["interval_s"].default


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--agent-interval``, ``--manager-interval`` (the shipped ones by default) and
    ``--bench-brokers`` (the local cluster's replication tunings instead of Kafka's)."""
    parser.add_argument(
        "--agent-interval",
        type=float,
        default=AGENT_INTERVAL_S,
        metavar="S",
        help=f"the agents' sampling interval, s (shipped: {AGENT_INTERVAL_S:g}; while their "
        f"broker moves data they sample every {AGENT_BUSY_INTERVAL_S:g} s where that is shorter)",
    )
    parser.add_argument(
        "--manager-interval",
        type=float,
        default=MANAGER_INTERVAL_S,
        metavar="S",
        help=f"seconds between the manager's cycles (shipped: {MANAGER_INTERVAL_S:g})",
    )
    parser.add_argument(
        "--bench-brokers",
        action="store_true",
        help="brokers with the local cluster's tunings (quick heartbeats and ISR lag, 16 MB "
        "segments, and on a shaped link a one-second quota window and 100 ms fetch backoff "
        "and wait) instead of Kafka's defaults",
    )


SMOKE_AGENT_INTERVAL_S = 2.0
SMOKE_MANAGER_INTERVAL_S = 3.0


def smoke(args: argparse.Namespace) -> None:
    """A smoke run (``--quick``) proves the script's path, not a figure, and writes no docs:
    its agents and manager run at 2 s and 3 s unless told otherwise, so that it ends in
    seconds, not cycles of 30."""
    if args.agent_interval == AGENT_INTERVAL_S:
        args.agent_interval = SMOKE_AGENT_INTERVAL_S
    if args.manager_interval == MANAGER_INTERVAL_S:
        args.manager_interval = SMOKE_MANAGER_INTERVAL_S


def departures(args: argparse.Namespace, broker_overrides: Mapping[str, str]) -> list[str]:
    """Each setting of the run that is not the shipped one, in words."""
    said = []
    if args.agent_interval != AGENT_INTERVAL_S:
        said.append(f"agents every {args.agent_interval:g} s (shipped {AGENT_INTERVAL_S:g} s)")
    if args.manager_interval != MANAGER_INTERVAL_S:
        said.append(f"a cycle every {args.manager_interval:g} s (shipped {MANAGER_INTERVAL_S:g} s)")
    if args.bench_brokers:
        said.append("brokers with the local cluster's tunings (`--bench-brokers`)")
    said += [f"broker `{key}={value}`" for key, value in sorted(broker_overrides.items())]
    return said


def header(
    args: argparse.Namespace,
    broker_overrides: Mapping[str, str],
    modelling: Mapping[str, str] | None = None,
) -> str:
    """The sentence a generated table opens with. ``modelling``: broker settings that model
    the bench's world rather than tune the cluster (replica fetches scaled to a shaped link,
    Kafka's own leader rebalancing off so that none lands in a later run's baseline): named,
    not counted as departures."""
    shipped = (
        f"agents every {AGENT_INTERVAL_S:g} s ({AGENT_BUSY_INTERVAL_S:g} s while their broker "
        f"moves data), a cycle every {MANAGER_INTERVAL_S:g} s"
    )
    # The nodes' thread pools are the machine's (two cores), whatever the run.
    modelled = "; modelling: the nodes' thread pools sized to two cores" + "".join(
        f", broker `{key}={value}`" for key, value in sorted((modelling or {}).items())
    )
    off = departures(args, broker_overrides)
    if not off:
        return (
            f"**As shipped**: kmedic's defaults ({shipped}), brokers at Kafka's defaults{modelled}."
        )
    return (
        f"**Not as shipped** (shipped: {shipped}; brokers at Kafka's defaults): "
        + "; ".join(off)
        + f"{modelled}."
    )
