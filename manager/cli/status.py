"""`kmedic status`: what kmedic is doing to a cluster, read from ZooKeeper in one go - who
leads (and with which fencing epoch), the mode the managers run in, the goal switches set at
run time, the in-flight plan, the open operator requests and the failure domains in
maintenance. It reads on a plain session: it never joins the election. What a manager decided
last and which alerts it holds are on its status page (`/status`) and its HTTP API
(`/api/v1/decision`), which need its HTTP port."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from manager.cli.zk_args import common_parser, zk_target
from manager.config import load_manager_config
from manager.coordination.plan_store import StoredPlan
from manager.coordination.session import zk_session
from manager.coordination.state import CoordinationState, read_state
from manager.coordination.state_view import state_document
from manager.coordination.znodes import require_cluster

CONFIG_MODE = "not set in ZooKeeper; each manager runs in its config's mode (default observe)"


def register(sub: Any) -> None:
    p = sub.add_parser(
        "status",
        parents=[common_parser()],
        help="who leads, the mode, the in-flight plan and open requests, from ZooKeeper",
        description=__doc__,
    )
    p.set_defaults(func=_status)


def _status(args: argparse.Namespace) -> int:
    target = zk_target(args)
    with zk_session(target.zk_connect, auth=target.auth) as client:
        require_cluster(client, target.root, target.cluster)
        state = read_state(client, target.cluster, target.root)
    if args.json:
        print(json.dumps(state_document(target.cluster, state), sort_keys=True))
    else:
        configured = load_manager_config(args.config).mode if args.config else None
        print("\n".join(status_lines(target.cluster, state, time.time(), configured)))
    return 0


def plan_line(plan: StoredPlan | None, now_s: float) -> str:
    """The in-flight plan in one sentence, with where it stood when its leader last said."""
    if plan is None or not plan.plan.moves:
        return "none"
    age = max(0.0, now_s - plan.written_at)
    line = (
        f"{len(plan.plan.moves)} moves left of {plan.plan.decision!r}, written by "
        f"{plan.instance} (epoch {plan.epoch}) {age:.0f} s ago"
    )
    progress = plan.plan.progress
    if progress is not None:
        said = max(0.0, now_s - plan.plan.progress_at)
        line += f"; {progress.sentence()} (as of {said:.0f} s ago)"
    return line


def status_lines(
    cluster: str, state: CoordinationState, now_s: float, configured: str | None = None
) -> list[str]:
    """One line per fact, each a sentence an operator reads without the docs; ``configured``:
    the mode of the config given (``--config``), which holds when none is set at run time."""
    leader = state.leader
    if leader is None:
        led = "none: no manager leads (is one running, and connected to ZooKeeper?)"
    else:
        led = f"{leader.instance}, epoch {state.current_epoch}"
    mode = state.mode.sentence() if state.mode else CONFIG_MODE
    if state.mode is None and configured is not None:
        mode = f"{configured} (from the config; none set at run time, an instance's --mode aside)"
    switches = state.switches
    switched = (
        switches.sentence() if switches and switches.goals else "none set; goals as configured"
    )
    planned = plan_line(state.plan, now_s)
    open_requests = [r for r in state.requests if r.open]
    requests = "; ".join(r.sentence() for r in open_requests) if open_requests else "none open"
    maintenance = state.placement.maintenance
    domains = (
        ", ".join(f"{d} ({m.reason})" for d, m in sorted(maintenance.items()))
        if maintenance
        else "none"
    )
    return [
        f"cluster: {cluster}",
        f"leader: {led}",
        f"mode: {mode}",
        f"in-flight plan: {planned}",
        f"requests: {requests}",
        f"maintenance: {domains}",
        f"switches: {switched}",
    ]
