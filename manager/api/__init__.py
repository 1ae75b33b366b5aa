"""The manager's HTTP API, status page and metrics on one server (docs/api.md)."""
