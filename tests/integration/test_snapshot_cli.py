"""`kmedic snapshot` looks at ZooKeeper without joining the leader election."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kazoo.client import KazooClient

pytestmark = pytest.mark.integration


@pytest.fixture
def zk(local_cluster: Any) -> Iterator[KazooClient]:
    client = KazooClient(hosts=local_cluster.zk_connect, timeout=10)
    client.start(timeout=10)
    yield client
    client.stop()
    client.close()


def test_a_snapshot_with_no_manager_running_leaves_the_epoch_alone(
    local_cluster: Any, zk: KazooClient, tmp_path: Path
) -> None:
    cluster = f"snap-{uuid.uuid4().hex[:8]}"
    base = f"/kmedic/{cluster}/manager"
    zk.create(f"{base}/epoch", b"5", makepath=True)
    _, before = zk.get(f"{base}/epoch")
    config = tmp_path / "manager.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "cluster": cluster,
                "bootstrap": local_cluster.bootstrap_servers,
                "zookeeper": {"zk_connect": local_cluster.zk_connect},
            }
        )
    )
    out = tmp_path / "snap.json"
    args = ["snapshot", "--config", str(config), "--out", str(out), "--feeds-wait", "2"]
    done = subprocess.run(
        [sys.executable, "-m", "composition.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    data, after = zk.get(f"{base}/epoch")
    assert (data, after.version) == (b"5", before.version)  # no election took place
    assert zk.exists(f"{base}/leader") is None
    leadership = json.loads(out.read_text())["leadership"]
    assert (leadership["epoch"], leadership["current_epoch"]) == (5, 5)


def test_readiness_reads_the_live_cluster_as_a_snapshot_does(
    local_cluster: Any, tmp_path: Path
) -> None:
    cluster = f"ready-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "manager.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "cluster": cluster,
                "bootstrap": local_cluster.bootstrap_servers,
                "zookeeper": {"zk_connect": local_cluster.zk_connect},
            }
        )
    )
    args = ["readiness", "--config", str(config), "--feeds-wait", "2", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "composition.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    # 3 when some loss cannot be healed: the session cluster holds RF 1 topics of other tests.
    assert done.returncode in (0, 3), done.stderr
    table = json.loads(done.stdout)
    brokers = {r["name"] for r in table if r["scenario"] == "broker"}
    assert brokers == {str(b) for b in local_cluster.broker_ids if local_cluster.is_alive(b)}
    assert all(r["healable"] or r["why"] or r["summary"] for r in table)
