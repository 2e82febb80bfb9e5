"""The verifier's JVM kernels (spark/jvm/*.java): compiled against pyspark's own jars, for Java
17 so any JDK Spark supports loads them. A wheel built by `make wheel` carries them compiled
(hatch_build.py), so a user's `dcdrill verify` needs only pyspark and a Java runtime. Without
them (a wheel built where pyspark or javac was missing, or another pyspark than the one they
were built against), they are compiled here on first use, by the JDK that runs Spark
(spark/java_runtime.py picks it): no Go, Maven or root. `make setup` calls this too.

    python -m dcdrill.spark.kernels        (a no-op when the jar matches the sources and pyspark)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dcdrill.infra import workload_jar
from dcdrill.spark import java_runtime

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
    home = java_runtime.java_home()
    javac = str(Path(home) / "bin" / "javac") if home else shutil.which("javac")
    if not javac or not Path(javac).exists():
        import pyspark

        raise KernelsUnavailable(
            f"this install carries no JVM kernels built for pyspark {pyspark.__version__} "
            "(a wheel from `make wheel` does), so the verifier compiles them once and needs "
            "a JDK 17, 21 or 25 for it (javac; a JRE has none): install one (apt-get install "
            "openjdk-17-jdk-headless) or point DCDRILL_SPARK_JAVA_HOME at it"
        )
    return javac


SHIPPED_JAR = Path(__file__).with_name("dcdrill-kernel.jar")  # in a wheel make wheel built
SHIPPED_KEY = SHIPPED_JAR.with_suffix(".key")


def ensure(say=None) -> Path:
    """The kernel jar in the cache: the wheel's own when it was built from these sources against
    this pyspark, else compiled now if missing or older than the sources or pyspark."""
    jar, key = java_runtime.kernel_jar(), _key()
    stamp = jar.with_suffix(".key")
    if jar.exists() and stamp.exists() and stamp.read_text() == key:
        return jar
    jar.parent.mkdir(parents=True, exist_ok=True)
    if SHIPPED_JAR.is_file() and SHIPPED_KEY.is_file() and SHIPPED_KEY.read_text() == key:
        partial = jar.with_suffix(".tmp")
        shutil.copyfile(SHIPPED_JAR, partial)
        os.replace(partial, jar)
    else:
        if say:
            say(f"compiling the verifier's JVM kernels (once) -> {jar}")
        compile_jar(jar)
    stamp.write_text(key)
    shutil.rmtree(jar.parent / "classes", ignore_errors=True)  # where `make setup` compiled them before
    return jar


def compile_jar(jar: Path) -> str:
    """Compile spark/jvm into `jar` (written whole or not at all); the key it was built for."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    with tempfile.TemporaryDirectory(prefix="dcdrill-kernels-") as tmp:
        done = subprocess.run(
            [
                _javac(),
                "--release",
                "17",
                "-Xlint:all,-path,-serial",
                "-Werror",
                "-cp",
                f"{jars}/*",
                "-d",
                tmp,
                *map(str, sorted(SOURCES.glob("*.java"))),
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise KernelsUnavailable(f"javac failed on spark/jvm:\n{done.stderr[-3000:]}")
        workload_jar.write_jar(Path(tmp), jar)  # fixed times: spark/java_runtime.py keys its archive by the digest
    return _key()


if __name__ == "__main__":
    try:
        ensure(say=lambda line: print(f"\n== setup: {line}", flush=True))
    except KernelsUnavailable as exc:
        sys.exit(f"dcdrill: {exc}")
