"""The verifier's JVM kernels (spark/jvm/*.java), compiled where they run: against pyspark's own
jars, by the JDK that runs Spark (spark/cds.py picks it), for Java 17 so any JDK Spark supports
loads them. A verifier needs only pyspark and a JDK: no Go, Maven or root. `make setup` calls this
too, and `dcdrill verify` does on first use.

    python -m dcdrill.spark.kernels        (a no-op when the jar matches the sources and pyspark)
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from dcdrill.spark import cds

SOURCES = Path(__file__).parent / "jvm"


class KernelsUnavailable(RuntimeError):
    pass


def _key() -> str:
    import pyspark

    digest = hashlib.sha256()
    for source in sorted(SOURCES.glob("*.java")):
        digest.update(source.read_bytes())
    return f"{digest.hexdigest()[:16]}-{pyspark.__version__}"


def _javac() -> str:
    home = cds.java_home()
    javac = str(Path(home) / "bin" / "javac") if home else shutil.which("javac")
    if not javac or not Path(javac).exists():
        raise KernelsUnavailable("the verifier compiles its JVM kernels once and needs a JDK 17, 21 or 25 for it "
                                 "(javac; a JRE has none): install one (apt-get install openjdk-17-jdk-headless) "
                                 "or point DCDRILL_SPARK_JAVA_HOME at it")
    return javac


def ensure(say=None) -> Path:
    """The kernel jar, compiled now if it is missing or older than the sources or pyspark."""
    import pyspark

    jar, key = cds.kernel_jar(), _key()
    stamp = jar.with_suffix(".key")
    if jar.exists() and stamp.exists() and stamp.read_text() == key:
        return jar
    if say:
        say(f"compiling the verifier's JVM kernels (once) -> {jar}")
    jars = Path(pyspark.__file__).parent / "jars"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dcdrill-kernels-") as tmp:
        done = subprocess.run([_javac(), "--release", "17", "-Xlint:all,-path,-serial", "-Werror",
                               "-cp", f"{jars}/*", "-d", tmp, *map(str, sorted(SOURCES.glob("*.java")))],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise KernelsUnavailable(f"javac failed on spark/jvm:\n{done.stderr[-3000:]}")
        partial = jar.with_suffix(".tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            # Fixed times: the same sources give the same jar, so the class-data archive keyed by
            # its digest (spark/cds.py) stays valid.
            entries = [("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\nCreated-By: dcdrill\r\n\r\n")]
            entries += [(str(c.relative_to(tmp)), c.read_bytes()) for c in sorted(Path(tmp).rglob("*.class"))]
            for name, data in entries:
                out.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
        os.replace(partial, jar)
    stamp.write_text(key)
    shutil.rmtree(jar.parent / "classes", ignore_errors=True)  # where `make setup` compiled them before
    return jar


if __name__ == "__main__":
    try:
        ensure(say=lambda line: print(f"\n== setup: {line}", flush=True))
    except KernelsUnavailable as exc:
        sys.exit(f"dcdrill: {exc}")
