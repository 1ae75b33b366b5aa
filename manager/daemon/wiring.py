"""The real collaborators of a manager instance, built from its config: Kafka sources, the
ZooKeeper coordinator, the executor, the audit log with its failover sinks."""

from __future__ import annotations

from kmedic.errors import KmedicError
from kmedic.logging import get_logger
from manager.analyzer.heal_solver import load_solver
from manager.audit.kafka_sink import KafkaAuditSink, ensure_audit_topic
from manager.audit.log import AuditLog
from manager.config import ManagerConfig
from manager.coordination.leadership import Coordinator, default_instance_id
from manager.daemon.manager import Manager
from manager.executor.admin_calls import AdminCalls
from manager.executor.executor import Executor
from manager.model.mode import Mode
from manager.monitor.sources import ClusterSources
from manager.monitor.traffic import AgentTraffic

log = get_logger(__name__)


def executor_calls(
    cfg: ManagerConfig, instance: str, sources: ClusterSources, coordinator: Coordinator
) -> AdminCalls:
    """The executor's Admin calls, named for this instance in the brokers' request logs, sent
    (and retried) only while it may act, and steered off the brokers any request of this
    manager waited on lately (the sources' memory of them, one for all its clients)."""
    return AdminCalls(
        cfg.cluster_client,
        cfg.executor.request_timeout_s,
        cfg.executor.admin_retry_s,
        client_id=f"kmedic-executor-{instance}",
        may_call=coordinator.may_act,
        avoided=sources.avoided,
    )


def sources_for(cfg: ManagerConfig, *, feed_process: bool | None = None) -> ClusterSources:
    """The sources of ``cfg``; ``feed_process`` over the config's (a command's one-off read
    keeps its feeds in its own process)."""
    return ClusterSources(
        cluster=cfg.cluster,
        bootstrap=cfg.cluster_client,
        feeds=cfg.own_topics_client,
        stats_topic=cfg.topics.brokerstats,
        loads_topic=cfg.topics.replica_loads,
        stats_lookback_s=cfg.stats_lookback_s,
        feed_process=cfg.feed_process if feed_process is None else feed_process,
    )


def build_manager(cfg: ManagerConfig, *, mode_flag: Mode | None = None) -> Manager:
    """The manager of ``cfg``; ``mode_flag``: the command line's ``--mode``, over a mode set
    at run time and the config's (manager/daemon/mode.py)."""
    load_solver()  # at start, not in the first heal's cycle
    instance = cfg.instance_id or default_instance_id()
    try:
        ensure_audit_topic(cfg.own_topics_client, cfg.topics.actions, timeout_s=10.0)
        topic_missing = False
    except KmedicError as exc:  # Kafka down at start: created before the first write instead
        log.warning("audit_topic_unavailable", error=str(exc))
        topic_missing = True
    secondary = cfg.secondary_client
    audit = AuditLog(
        KafkaAuditSink(
            "primary",
            cfg.own_topics_client,
            cfg.topics.actions,
            create_topic=topic_missing,
            client_id=f"kmedic-audit-{instance}",
        ),
        cfg.audit.spool_dir,
        secondary=(
            KafkaAuditSink(
                "secondary", secondary, cfg.topics.actions, client_id=f"kmedic-audit-{instance}"
            )
            if secondary
            else None
        ),
        write_timeout_s=cfg.audit.write_timeout_s,
        retry_interval_s=cfg.audit.retry_interval_s,
    )
    sources = sources_for(cfg)
    coordinator = Coordinator(cfg.zookeeper, cfg.cluster, instance)
    calls = executor_calls(cfg, instance, sources, coordinator)
    traffic = AgentTraffic(lambda: sources.feeds.take().agents, cfg.capacity)
    manager = Manager(
        cfg,
        instance=instance,
        sources=sources,
        coordinator=coordinator,
        executor=Executor(cfg.cluster_client, cfg.executor, traffic=traffic, calls=calls),
        audit=audit,
        mode_flag=mode_flag,
    )
    return manager
