"""The local real cluster for the demo and the tests (see ``LocalCluster``)."""

from kmedic.localcluster.cluster import LocalCluster, Node
from kmedic.localcluster.configs import ClusterSpec

__all__ = ["ClusterSpec", "LocalCluster", "Node"]
