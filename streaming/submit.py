"""Entry point for ``spark-submit``: the master, jars and driver memory come from the command
line (docs/streaming.md shows the command); everything else from the same YAML config.

    spark-submit --master spark://host:7077 --jars ... streaming/submit.py --config stream.yaml
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kmedic.errors import KmedicError
from kmedic.logging import LEVELS, log_level, setup_logging
from streaming.cli import add_arguments, config_from_args, run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="streaming/submit.py", description=__doc__)
    add_arguments(parser)
    parser.add_argument("--log-level", type=log_level, choices=LEVELS, default="INFO")
    args = parser.parse_args(argv)
    setup_logging(args.log_level)
    try:
        return run(config_from_args(args, under_submit=True))
    except KmedicError as exc:
        print(f"kmedic: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
