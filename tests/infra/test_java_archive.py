"""The Kafka JVMs' class-data archive (infra/java_archive.py): its name follows the JDK and the
jars it must match, and the lab's inventory names it only once setup trained it. That the lab's
JVMs map it: tests/infra/test_lab_integration.py."""

import os
from pathlib import Path

from dcdrill.infra import java_archive
from dcdrill.infra.lab import layout


def _jdk(root: Path, version: str) -> str:
    (root / "bin").mkdir(parents=True)
    (root / "release").write_text(f'JAVA_VERSION="{version}"\n')
    java = root / "bin" / "java"
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    return str(java)


def _libs(tmp_path: Path) -> Path:
    libs = tmp_path / "kafka" / "libs"
    libs.mkdir(parents=True)
    for name in ("kafka_2.13-3.9.1.jar", "kafka-clients-3.9.1.jar"):
        (libs / name).write_bytes(b"PK" + name.encode())
    return libs


def test_the_name_follows_the_jdk_and_every_jars_size_and_time(tmp_path):
    libs = _libs(tmp_path)
    j17, j21 = _jdk(tmp_path / "jdk17", "17.0.15"), _jdk(tmp_path / "jdk21", "21.0.2")
    first = java_archive.archive_path(libs, j17)
    assert first.parent == libs.parent and first.name.startswith("cds-17-0-15-") and first.suffix == ".jsa"
    assert java_archive.archive_path(libs, j17) == first
    assert java_archive.archive_path(libs, j21) != first
    jar = libs / "kafka-clients-3.9.1.jar"
    os.utime(jar, ns=(jar.stat().st_atime_ns, jar.stat().st_mtime_ns + 1_000_000_000))
    assert java_archive.archive_path(libs, j17) != first  # a jar replaced in place: the JVM would refuse it too


def test_the_lab_inventory_names_the_archive_only_once_trained(tmp_path, monkeypatch):
    libs = _libs(tmp_path)
    java = _jdk(tmp_path / "jdk", "17.0.15")
    monkeypatch.setenv("PATH", f"{Path(java).parent}:{os.environ['PATH']}")
    assert layout._services("3.9.1", tmp_path)["java_class_archive"] == ""
    path = java_archive.archive_path(libs)
    path.write_bytes(b"archive")
    services = layout._services("3.9.1", tmp_path)
    assert services["java_class_archive"] == str(path) and services["kafka_libs_dir"] == str(libs)
    monkeypatch.setenv("DCDRILL_CLASS_ARCHIVE", "off")
    assert layout._services("3.9.1", tmp_path)["java_class_archive"] == ""
