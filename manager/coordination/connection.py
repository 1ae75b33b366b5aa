"""How a manager instance talks to ZooKeeper: the manager config's ``zookeeper:`` section."""

from __future__ import annotations

import os
import socket
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from manager.coordination.acls import ZooKeeperAuth

SessionExpiredPolicy = Literal["reconnect", "shutdown"]


class CoordinationConfig(BaseModel):
    """How a manager instance talks to ZooKeeper (the manager config's ``zookeeper:``)."""

    model_config = ConfigDict(extra="forbid")

    zk_connect: str = Field(description="ZooKeeper connect string, host:port[,host:port...]")
    root: str = Field(default="/kmedic", pattern=r"^/[A-Za-z0-9_.\-/]*[A-Za-z0-9_.\-]$")
    session_timeout_s: float = Field(default=10.0, gt=0)
    session_expired_policy: SessionExpiredPolicy = "reconnect"
    max_reconnect_tries: int = Field(default=10, ge=1)
    reconnect_delay_s: float = Field(default=0.5, gt=0)
    reconnect_max_delay_s: float = Field(default=5.0, gt=0)
    auth: ZooKeeperAuth | None = Field(
        default=None,
        description="digest identity for kmedic's session and the ACLs of its znodes",
    )


def default_instance_id() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"
