"""HTTP: Prometheus metrics, /healthz and the read-only status page."""
