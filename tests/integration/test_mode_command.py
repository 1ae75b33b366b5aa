"""`kmedic mode` against a real ZooKeeper: unset, then switched, read back by the cycle's one
ZooKeeper read (what every manager instance sees), and a corrupt mode znode named."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from helpers import kmedic_in_process
from kazoo.client import KazooClient
from zk_support import zk_connect_for

from manager.coordination.state import read_state
from manager.coordination.znodes import CoordinationError, manager_path

pytestmark = pytest.mark.integration


@pytest.fixture
def zk_hosts(request: pytest.FixtureRequest) -> str:
    return zk_connect_for(request)


@pytest.fixture
def client(zk_hosts: str) -> Iterator[KazooClient]:
    zk = KazooClient(hosts=zk_hosts)
    zk.start(timeout=15)
    yield zk
    zk.stop()
    zk.close()


def test_the_mode_is_switched_read_back_and_validated(
    zk_hosts: str, client: KazooClient, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = f"mode-{uuid.uuid4().hex[:8]}"
    where = ["--zk", zk_hosts, "--cluster", cluster]
    code, out, _ = kmedic_in_process(capsys, "mode", *where)
    assert code == 0 and "not set in ZooKeeper" in out
    assert read_state(client, cluster, "/kmedic").mode is None

    code, out, _ = kmedic_in_process(capsys, "mode", "observe", "--why", "day one", *where)
    assert (
        code == 0
        and out.startswith("mode: observe, set by ")
        and out.rstrip().endswith(": day one")
    )
    seen = read_state(client, cluster, "/kmedic").mode
    assert seen is not None and seen.mode == "observe" and seen.why == "day one"

    code, out, _ = kmedic_in_process(capsys, "mode", "act", "--json", *where)
    assert code == 0 and json.loads(out)["mode"] == "act"
    seen = read_state(client, cluster, "/kmedic").mode
    assert seen is not None and seen.mode == "act"

    with pytest.raises(SystemExit) as bad:
        kmedic_in_process(capsys, "mode", "sometimes", *where)
    assert bad.value.code == 2 and "invalid choice: 'sometimes'" in capsys.readouterr().err

    client.set(f"{manager_path('/kmedic', cluster)}/mode", b'{"mode": "maybe"}')
    with pytest.raises(CoordinationError, match="holds no valid mode: mode: Input should be"):
        read_state(client, cluster, "/kmedic")
