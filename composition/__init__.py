"""The composition root: the `kmedic` command that dispatches to every role, the demo and the local
pipeline. The one place that may import all roles.
"""
