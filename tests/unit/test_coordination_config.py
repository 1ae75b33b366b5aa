"""Coordination settings and failures that need no running ZooKeeper."""

from __future__ import annotations

import socket

import pytest
from pydantic import ValidationError

from kmedic.errors import KmedicError
from manager.coordination.leadership import CoordinationConfig, Coordinator, FencedError
from manager.coordination.plan_document import PlanDocument
from manager.coordination.znodes import CoordinationError, manager_path


def closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def test_paths_and_bad_cluster_names() -> None:
    assert manager_path("/kmedic/", "prod") == "/kmedic/prod/manager"
    with pytest.raises(KmedicError, match="invalid cluster name 'a/b'"):
        manager_path("/kmedic", "a/b")


def test_config_rejects_bad_values() -> None:
    with pytest.raises(ValidationError, match="session_expired_policy"):
        CoordinationConfig(zk_connect="z:2181", session_expired_policy="pray")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="max_reconnect_tries"):
        CoordinationConfig(zk_connect="z:2181", max_reconnect_tries=0)
    with pytest.raises(ValidationError, match="root"):
        CoordinationConfig(zk_connect="z:2181", root="kmedic")


def test_unreachable_zookeeper_is_named_and_nothing_may_act() -> None:
    address = f"127.0.0.1:{closed_port()}"
    coord = Coordinator(
        CoordinationConfig(zk_connect=address, max_reconnect_tries=2, reconnect_delay_s=0.1),
        "c1",
        "m1",
    )
    with pytest.raises(CoordinationError, match=f"cannot connect to ZooKeeper at {address}"):
        coord.start(timeout_s=2)
    assert not coord.may_act()
    with pytest.raises(FencedError, match="never held leadership"):
        coord.plans.write(PlanDocument(), None)
