"""`make image`'s pure parts (the real build is tests/integration/test_image.py): the Debian
mirror read from apt's sources, the bundle of the host's local CAs, the arguments, and the
bootstrap's choice of what the image carries."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def image() -> ModuleType:
    load("bootstrap")
    return load("image")


DEB822 = """Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security

Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
"""
ONE_LINE = "# a comment\ndeb [arch=amd64] http://other.example/debian bookworm main\n"
FOREIGN = "Types: deb\nURIs: https://packages.vendor.example/apt\nSuites: stable\n"


def test_the_mirror_comes_from_deb822_sources_skipping_security(
    image: ModuleType, tmp_path: Path
) -> None:
    sources = tmp_path / "debian.sources"
    sources.write_text(DEB822)
    assert image.apt_mirror([tmp_path / "missing.list", sources]) == "http://mirror.example/debian"


def test_the_mirror_comes_from_a_one_line_source(image: ModuleType, tmp_path: Path) -> None:
    vendor, listed = tmp_path / "vendor.sources", tmp_path / "sources.list"
    vendor.write_text(FOREIGN)
    listed.write_text(ONE_LINE)
    assert image.apt_mirror([vendor, listed]) == "http://other.example/debian"


def test_no_debian_mirror_is_an_error_that_says_so(image: ModuleType, tmp_path: Path) -> None:
    vendor = tmp_path / "vendor.sources"
    vendor.write_text(FOREIGN)
    with pytest.raises(image.ImageError, match="no Debian mirror"):
        image.apt_mirror([vendor])


def test_local_cas_go_to_one_bundle_and_none_means_no_secret(
    image: ModuleType, tmp_path: Path
) -> None:
    cas = tmp_path / "cas"
    bundle = tmp_path / "out" / "extra.pem"
    assert image.extra_ca(cas, bundle) is None
    cas.mkdir()
    assert image.extra_ca(cas, bundle) is None
    (cas / "b.crt").write_text("-----BEGIN CERTIFICATE-----\nB\n-----END CERTIFICATE-----")
    (cas / "a.crt").write_text("-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n")
    (cas / "notes.txt").write_text("not a certificate")
    assert image.extra_ca(cas, bundle) == bundle
    text = bundle.read_text()
    assert text.count("BEGIN CERTIFICATE") == 2
    assert text.index("\nA\n") < text.index("\nB\n")
    assert "not a certificate" not in text


def test_unknown_arguments_are_refused_with_the_usage(
    image: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert image.main(["--push"]) == 2
    assert "usage: image.py [--kafka] (got --push)" in capsys.readouterr().err


def test_the_bootstrap_refuses_unknown_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert load("bootstrap").main(["--runtim"]) == 2
    assert "usage: bootstrap.py [--runtime | --spark-functions] (got --runtim)" in (
        capsys.readouterr().err
    )


def test_the_image_carries_only_the_jars_the_roles_run() -> None:
    groups = tomllib.loads((ROOT / "configs" / "jvm-artifacts.toml").read_text())
    assert [name for name, spec in groups.items() if spec.get("runtime")] == ["spark-kafka"]
