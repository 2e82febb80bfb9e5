"""The Java workload's jar (infra/workload_jar.py): compiled once per content into the cache,
the same bytes for the same classes, and without a JDK or Kafka's jars a refusal naming both."""

import zipfile

import pytest

from dcdrill.infra import workload_jar


def test_the_same_classes_give_the_same_bytes_whenever_they_were_built(tmp_path):
    classes = tmp_path / "classes" / "dcdrill"
    classes.mkdir(parents=True)
    (classes / "Workload.class").write_bytes(b"\xca\xfe\xba\xbe one")
    (classes / "Audit.class").write_bytes(b"\xca\xfe\xba\xbe two")
    workload_jar.write_jar(tmp_path / "classes", tmp_path / "a.jar")
    (classes / "Workload.class").touch()  # a later build: new file times, same contents
    workload_jar.write_jar(tmp_path / "classes", tmp_path / "b.jar")
    assert (tmp_path / "a.jar").read_bytes() == (tmp_path / "b.jar").read_bytes()
    names = zipfile.ZipFile(tmp_path / "a.jar").namelist()
    assert names == ["META-INF/MANIFEST.MF", "dcdrill/Audit.class", "dcdrill/Workload.class"]
    assert not list(tmp_path.glob("*.tmp"))  # written whole


def test_the_jar_is_built_once_per_content_and_named_after_it():
    jar = workload_jar.ensure()  # this checkout's sources, against the cache's Kafka jars
    assert jar.name.startswith("dcdrill-workload-") and workload_jar.ensure() == jar
    assert any(n.endswith(".class") for n in zipfile.ZipFile(jar).namelist())


def test_without_kafkas_jars_the_refusal_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "empty-cache"))
    with pytest.raises(workload_jar.WorkloadJarUnavailable, match="it needs javac .* and Kafka's jars in"):
        workload_jar.ensure()
