"""The Java workload's program (validation/jvm/*.java, run by validation/java_client.py on the
client hosts): compiled here on the control, against the oldest Kafka client setup brings, for
Java 17, and shipped in the agents' bundle (agent_runtime.bundle). The hosts need a Java
runtime and their stack's Kafka jars (roles/java), never a compiler or Maven.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

from dcdrill.infra.constants import KAFKA_VERSIONS, cache_dir

SOURCES = Path(__file__).parent.parent / "validation" / "jvm"
FIXED_TIME = (2020, 1, 1, 0, 0, 0)


class WorkloadJarUnavailable(RuntimeError):
    pass


def _libs(cache: Path) -> Path:
    """The oldest Kafka's jars: a program that compiles against them runs on every newer client."""
    return cache / KAFKA_VERSIONS[min(KAFKA_VERSIONS, key=lambda v: tuple(map(int, v.split("."))))] / "libs"


def write_jar(classes: Path, jar: Path) -> None:
    """The .class files under `classes` as `jar`, written whole or not at all, with fixed times:
    the same sources give the same bytes (a class-data archive keyed by its digest stays valid)."""
    partial = jar.with_suffix(".tmp")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
        entries = [("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\nCreated-By: dcdrill\r\n\r\n")]
        entries += [(str(c.relative_to(classes)), c.read_bytes()) for c in sorted(classes.rglob("*.class"))]
        for name, data in entries:
            out.writestr(zipfile.ZipInfo(name, FIXED_TIME), data, zipfile.ZIP_DEFLATED)
    os.replace(partial, jar)


def sources() -> list[Path]:
    return sorted(SOURCES.glob("*.java"))


def ensure() -> Path:
    """The jar for these sources, compiled once per content into the tool cache's agent folder."""
    cache = cache_dir()
    digest = hashlib.sha256(b"".join(s.name.encode() + b"\0" + s.read_bytes() for s in sources()))
    jar = cache / "agent" / f"dcdrill-workload-{digest.hexdigest()[:12]}.jar"
    if jar.exists():
        return jar
    libs = _libs(cache)
    javac = shutil.which("javac")
    if javac is None or not any(libs.glob("kafka-clients-*.jar")):
        raise WorkloadJarUnavailable(
            f"the Java workload is compiled on the control: it needs javac (a JDK 17 or later) and "
            f"Kafka's jars in {libs} (`dcdrill setup`, or `make setup` in a checkout)"
        )
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dcdrill-workload-") as tmp:
        done = subprocess.run(
            [javac, "--release", "17", "-Xlint:all,-path,-serial", "-Werror", "-cp", f"{libs}/*", "-d", tmp]
            + [str(s) for s in sources()],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise WorkloadJarUnavailable(f"javac failed on validation/jvm:\n{done.stderr[-3000:]}")
        write_jar(Path(tmp), jar)
    for older in jar.parent.glob("dcdrill-workload-*.jar"):
        if older != jar:
            older.unlink(missing_ok=True)
    return jar
