"""The chaos soak: real processes, a seeded fault schedule, and Kafka's own verifiable
producer and consumer to prove no acknowledged write is lost (docs/reliability.md)."""
