"""The local real cluster for the demo and the tests (see ``LocalCluster``)."""

from kmedic.localcluster.cluster import LocalCluster
from kmedic.localcluster.configs import ClusterSpec
from kmedic.localcluster.layout import Node

__all__ = ["ClusterSpec", "LocalCluster", "Node"]
