"""How the tools that read Kafka directly (``actions tail``, ``topics check``) find it: a
manager config (its ``kafka:`` section, security included), else ``--bootstrap``, else
$KMEDIC_BOOTSTRAP (named as the flag and the configs' ``bootstrap:``; the former
$KMEDIC_BOOTSTRAP_SERVERS is still read)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from kmedic.errors import KmedicError
from kmedic.kafka_client import Cluster
from manager.config import ManagerConfig


def add_kafka_args(parser: argparse.ArgumentParser, config_help: str) -> None:
    parser.add_argument(
        "--bootstrap",
        default=os.environ.get("KMEDIC_BOOTSTRAP") or os.environ.get("KMEDIC_BOOTSTRAP_SERVERS"),
        help="Kafka bootstrap servers, host:port[,host:port...] (default: $KMEDIC_BOOTSTRAP)",
    )
    parser.add_argument("--config", type=Path, help=config_help)


def kafka_from(args: argparse.Namespace) -> tuple[Cluster, ManagerConfig | None]:
    """The cluster to read, and the manager config when one was given."""
    if args.config:
        from manager.config import load_manager_config

        cfg = load_manager_config(args.config)
        return cfg.cluster_client, cfg
    if args.bootstrap:
        return args.bootstrap, None
    raise KmedicError(
        "no Kafka given: pass --config MANAGER.yaml, --bootstrap HOST:PORT or set KMEDIC_BOOTSTRAP"
    )
