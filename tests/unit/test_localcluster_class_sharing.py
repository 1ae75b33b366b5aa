"""The class-sharing archive's options and class list, without a JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from kmedic.localcluster import class_sharing, class_sharing_build, process


@pytest.fixture
def jvm_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KMEDIC_JVM_DIR", str(tmp_path))
    return tmp_path


def test_no_archive_means_no_option(jvm_dir: Path) -> None:
    assert class_sharing.jvm_options("kafka") == ()


def test_a_built_archive_is_named_to_the_jvm(jvm_dir: Path) -> None:
    archive = jvm_dir / "kafka" / "class-sharing" / class_sharing.ARCHIVE
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"archive")
    assert class_sharing.archive_path("kafka") == archive
    assert class_sharing.jvm_options("kafka") == (f"-XX:SharedArchiveFile={archive}",)
    assert class_sharing.jvm_options("kafka-4.1") == ()  # each release its own


def test_the_options_go_after_the_light_ones_and_before_the_class_path() -> None:
    cmd = process.java_command(
        classpath=[Path("/jars/a.jar")],
        main_class="kafka.Kafka",
        args=["server.properties"],
        heap_mb=256,
        system_properties={},
        options=("-XX:SharedArchiveFile=/x.jsa",),
    )
    light = cmd.index(process.LIGHT_JVM_OPTIONS[-1])
    assert cmd.index("-XX:SharedArchiveFile=/x.jsa") == light + 1
    assert cmd.index("-cp") > light + 1


def test_the_class_list_is_each_nodes_classes_once_without_a_line_cut_short(
    tmp_path: Path,
) -> None:
    controller = tmp_path / "controller.lst"
    broker = tmp_path / "broker.lst"
    controller.write_text("# NOTE: Do not modify this file.\njava/lang/Object\nkafka/Kafka\n")
    broker.write_text(
        "# NOTE: Do not modify this file.\njava/lang/Object\nkafka/server/BrokerServer\nkafka/ser"
    )
    listed = class_sharing_build._union([controller, broker, tmp_path / "never-written.lst"])
    assert listed == [
        "# NOTE: Do not modify this file.",
        "java/lang/Object",
        "kafka/Kafka",
        "kafka/server/BrokerServer",
    ]
