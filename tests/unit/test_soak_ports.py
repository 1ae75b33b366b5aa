"""The soak's and the pipeline's ports are chosen in one call each: a port is free only until
something binds it, and the kernel hands a released port out again (the short soak once
started an agent on the port chosen a moment before for a manager, which then could not
start). Here ``free_ports`` reuses its ports from call to call, as the kernel may."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from composition import pipeline as pipeline_module
from composition.pipeline import Pipeline
from composition.soak import run
from kmedic.localcluster import process


def reusing(count: int, host: str = "127.0.0.1") -> list[int]:
    return [40_000 + i for i in range(count)]


def test_every_port_the_soak_serves_on_is_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(process, "free_ports", reusing)
    ports = run.role_ports([1, 2, 3, 4, 5, 6])
    assert set(ports) == {"m1", "m2", "stream", "pipeline"} | {f"agent-{b}" for b in range(1, 7)}
    assert len(set(ports.values())) == len(ports)


def test_the_pipelines_two_ports_are_two(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(pipeline_module.process, "free_ports", reusing)
    made = Pipeline(SimpleNamespace(), tmp_path)  # type: ignore[arg-type]
    assert made.stream_metrics_port != made.manager_port
    given = Pipeline(SimpleNamespace(), tmp_path, stream_metrics_port=7, manager_port=8)  # type: ignore[arg-type]
    assert (given.stream_metrics_port, given.manager_port) == (7, 8)
