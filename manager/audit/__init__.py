"""The audit log: records, the Kafka sink, the local spool, failover and replay, and the reader."""
