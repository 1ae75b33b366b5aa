"""kmedic: a self-healing daemon for Apache Kafka (shared core)."""

__version__ = "0.1.0"
