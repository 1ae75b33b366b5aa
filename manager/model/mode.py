"""The daemon's mode (``kmedic mode``, kept in ZooKeeper): act, or observe (decide and audit
as in act, and write nothing to the cluster)."""

from __future__ import annotations

from typing import Literal

Mode = Literal["act", "observe"]
