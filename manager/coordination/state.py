"""What a cycle reads from ZooKeeper, in one go: the placement config, the in-flight plan, the
current fencing epoch, the operator requests, the mode and the goal switches.

The leader reads it on its coordinator's own session once per cycle and uses that one read
for the whole cycle (the plan's version for its compare-and-set writes included). Tools that
only look — ``kmedic snapshot`` — read it on a plain session (manager.coordination.session),
which joins no election and so can never bump the epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from manager.coordination.mode_store import ModeRecord, mode_path, parse_mode
from manager.coordination.placement_store import ZkConfigStore
from manager.coordination.plan_store import StoredPlan, parse_stored_plan
from manager.coordination.request_store import StoredRequest, read_requests
from manager.coordination.switch_store import SwitchRecord, parse_switches, switches_path
from manager.coordination.znodes import (
    CoordinationError,
    LeaderRecord,
    decode_json,
    manager_path,
    parse_epoch,
    parse_leader,
)
from manager.model.placement_config import PlacementConfig


@dataclass(frozen=True)
class CoordinationState:
    placement: PlacementConfig
    plan: StoredPlan | None
    current_epoch: int
    leader: LeaderRecord | None  # None: nobody leads
    requests: tuple[StoredRequest, ...] = ()  # operator requests, oldest first
    mode: ModeRecord | None = None  # switched at run time (kmedic mode); None: the config's
    switches: SwitchRecord | None = None  # goal switches set at run time; None: the config's


def read_state(client: KazooClient, cluster: str, root: str) -> CoordinationState:
    """What a cycle reads. The epoch, the plan and the leader znode are requested together,
    before the placement config is walked, so the cycle pays one round trip for them."""
    base = manager_path(root, cluster)
    epoch_path, plan_path, leader_path = f"{base}/epoch", f"{base}/plan", f"{base}/leader"
    try:
        epoch_req = client.get_async(epoch_path)
        plan_req = client.get_async(plan_path)
        leader_req = client.get_async(leader_path)
        mode_req = client.get_async(mode_path(base))
        switches_req = client.get_async(switches_path(base))
        placement = ZkConfigStore(client, cluster, root).load()
        requests = read_requests(client, base)
        epoch, plan, leader = _value(epoch_req), _value(plan_req), _value(leader_req)
        mode, switches = _value(mode_req), _value(switches_req)
    except (KazooException, KazooTimeoutError) as exc:
        raise CoordinationError(f"cannot read {base} from ZooKeeper: {exc!r}") from exc
    return CoordinationState(
        placement=placement,
        plan=None
        if plan is None
        else parse_stored_plan(decode_json(plan[0], plan_path), plan[1], plan_path),
        current_epoch=0 if epoch is None else parse_epoch(epoch[0], epoch_path),
        leader=None if leader is None else parse_leader(leader[0], leader_path),
        requests=requests,
        mode=None if mode is None else parse_mode(mode[0], mode_path(base)),
        switches=None if switches is None else parse_switches(switches[0], switches_path(base)),
    )


def _value(request: object) -> tuple[bytes, object] | None:
    try:
        data, stat = request.get(timeout=30)  # type: ignore[attr-defined]
    except NoNodeError:
        return None
    return data, stat
