"""The bootstrap's pure parts: POM rendering and stamps (the real run is every `make`)."""

from __future__ import annotations

import importlib.util
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_bootstrap() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bootstrap", ROOT / "scripts" / "bootstrap.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bootstrap"] = module
    spec.loader.exec_module(module)
    return module


def test_pom_lists_every_artifact_with_exclusions() -> None:
    bootstrap = load_bootstrap()
    pom = bootstrap.pom_for("g", {"artifacts": ["a:b:1", "c:d:2"], "exclude": ["x:y"]})
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    root = ET.fromstring(pom)
    deps = root.findall("m:dependencies/m:dependency", ns)
    assert [
        (d.findtext("m:groupId", namespaces=ns), d.findtext("m:version", namespaces=ns))
        for d in deps
    ] == [
        ("a", "1"),
        ("c", "2"),
    ]
    for dep in deps:
        assert dep.findtext("m:exclusions/m:exclusion/m:artifactId", namespaces=ns) == "y"


def test_every_configured_group_renders() -> None:
    import tomllib

    bootstrap = load_bootstrap()
    groups = tomllib.loads((ROOT / "configs" / "jvm-artifacts.toml").read_text())
    assert {"kafka", "jmx-exporter", "zookeeper", "spark-kafka"} <= set(groups)
    for name, spec in groups.items():
        ET.fromstring(bootstrap.pom_for(name, spec))


def test_stamp_matches_only_the_same_value(tmp_path: Path) -> None:
    bootstrap = load_bootstrap()
    stamp = tmp_path / "s"
    assert not bootstrap.stamp_matches(stamp, "v1")
    stamp.write_text("v1\n")
    assert bootstrap.stamp_matches(stamp, "v1")
    assert not bootstrap.stamp_matches(stamp, "v2")
