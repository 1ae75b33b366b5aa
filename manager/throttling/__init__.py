"""Replication throttles: which replicas and brokers the moves need throttled, at what rate, and
the configs kmedic owns (docs/executor.md, "Throttles")."""
