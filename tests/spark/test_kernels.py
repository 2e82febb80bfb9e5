"""The verifier's JVM kernels are compiled where they run, by the JDK alone: a verifier installed
without Go, Maven or root builds them on first use, once, and the same sources give the same jar."""

import zipfile

import pytest

from dcdrill.spark import java_runtime, kernels


def test_the_kernels_compile_once_from_the_sources_and_the_same_sources_give_the_same_jar(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path))
    said = []
    jar = kernels.ensure(say=said.append)
    assert jar == java_runtime.kernel_jar() and len(said) == 1 and "compiling" in said[0]
    names = zipfile.ZipFile(jar).namelist()
    assert "dcdrill/Scan.class" in names and "dcdrill/MirrorFold.class" in names
    first = jar.read_bytes()
    assert kernels.ensure(say=said.append) == jar and len(said) == 1  # current: nothing to do
    jar.with_suffix(".key").write_text("stale")
    kernels.ensure(say=said.append)
    assert len(said) == 2 and jar.read_bytes() == first


def test_without_a_jdk_the_error_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path))
    monkeypatch.setattr(java_runtime, "java_home", lambda: str(tmp_path / "a-jre"))
    with pytest.raises(kernels.KernelsUnavailable, match="needs a JDK 17, 21 or 25"):
        kernels.ensure()
