"""`kmedic agent --config FILE`: run the collector agent beside one broker."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from agent.config import load_agent_config


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "agent",
        help="sample one broker every interval and publish BrokerStats records",
        description="Collector agent: reads the broker's JMX exporter and the Admin API, "
        "publishes one BrokerStats record per interval. Settings: YAML file, overridden by "
        "KMEDIC_AGENT__<FIELD> environment variables (see docs/agent.md).",
    )
    parser.add_argument(
        "--config", type=Path, default=None, help="YAML file (configs/agent.example.yaml)"
    )
    parser.set_defaults(func=cmd_agent)


def cmd_agent(args: argparse.Namespace) -> int:
    from agent.loop import run_agent

    return run_agent(load_agent_config(args.config))
