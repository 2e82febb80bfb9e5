"""The verifier's JVM: which JDK runs Spark, the jars on its classpath (the kernels, s3a) and its
class-data archive (built by spark/java_archive.py; the lab's Kafka JVMs have theirs, infra/java_archive.py).

JDK: Spark 4 runs on Java 17, 21 and 25. The newest of those found on the machine is used
(`DCDRILL_SPARK_JAVA_HOME` picks one, otherwise JAVA_HOME and then /usr/lib/jvm are searched),
because its JIT and collector are what a verify run mostly waits for (docs/benchmarks.md
has the figures). Kafka keeps the system JDK.

Archive: Spark's driver loads many thousand classes before the first query; on a 2-core machine
that is seconds of every `dcdrill verify`. The JVM can map them from an archive dumped by an
earlier run (AppCDS, JDK 13+), which shortens the session's start and the first query
(docs/benchmarks.md). The archive is tied to the JDK and to pyspark's jars, hence the
name; a stale or missing archive only costs the time back (the JVM loads classes itself).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

from dcdrill.infra.constants import cache_dir

SUPPORTED = (25, 21, 17)  # Java versions Spark 4 runs on, preferred first


def _major(home: Path) -> int | None:
    try:
        for line in (home / "release").read_text().splitlines():
            if line.startswith("JAVA_VERSION="):
                return int(line.split("=", 1)[1].strip('"').split(".")[0])
    except (OSError, ValueError):
        pass
    return None


def java_home() -> str | None:
    """The JDK for Spark: DCDRILL_SPARK_JAVA_HOME, else the newest supported one among JAVA_HOME
    and /usr/lib/jvm/*; None leaves the choice to PATH."""
    if os.environ.get("DCDRILL_SPARK_JAVA_HOME"):
        return os.environ["DCDRILL_SPARK_JAVA_HOME"]
    candidates = [Path(os.environ["JAVA_HOME"])] if os.environ.get("JAVA_HOME") else []
    jvm = Path("/usr/lib/jvm")
    candidates += sorted(p for p in jvm.iterdir() if not p.is_symlink()) if jvm.is_dir() else []
    found = [
        (SUPPORTED.index(m), str(h))
        for h in candidates
        if (m := _major(h)) in SUPPORTED and (h / "bin" / "java").exists()
    ]
    return min(found)[1] if found else None


@contextlib.contextmanager
def spark_java_home():
    """JAVA_HOME = java_home() while pyspark launches its JVM, and as it was afterwards (the
    lab's JVMs, started later from the same process, keep the system JDK)."""
    home, saved = java_home(), os.environ.get("JAVA_HOME")
    if home:
        os.environ["JAVA_HOME"] = home
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("JAVA_HOME", None)
        else:
            os.environ["JAVA_HOME"] = saved


def s3a_jars() -> list[str]:
    """hadoop-aws and the AWS SDK modules it calls, as `make setup` resolved them from Maven Central
    (infra/toolchain/s3a-pom.xml); empty when they are not there."""
    libs = cache_dir() / "s3a" / "libs"
    return sorted(str(p) for p in libs.glob("*.jar")) if libs.is_dir() else []


def kernel_jar() -> Path:
    """The verifier's JVM kernels (spark/jvm/*.java), as `make setup` compiled them."""
    return cache_dir() / "spark-kernel" / "dcdrill-kernel.jar"


def archive_path() -> Path:
    """Named after what it must match: pyspark, the JDK and the kernel jar on the classpath (the
    JVM checks the jar's size and time and silently ignores a stale archive)."""
    import hashlib

    import pyspark

    tag = "".join(ch if ch.isalnum() else "-" for ch in _java_version()) or "jdk"
    jar = kernel_jar()
    kernel = hashlib.sha256(jar.read_bytes()).hexdigest()[:8] if jar.exists() else "none"
    return cache_dir() / f"spark-cds-{pyspark.__version__}-{tag}-{kernel}.jsa"


def _java_version() -> str:
    """The Spark JDK's version ("25.0.3"): from its `release` file, which every JDK build ships,
    else from `java -version` (a JVM start, on every verify)."""
    home = java_home()
    release = Path(home) / "release" if home else None
    if release is not None and release.is_file():
        for line in release.read_text(errors="replace").splitlines():
            if line.startswith("JAVA_VERSION="):
                return line.split("=", 1)[1].strip().strip('"')
    java_bin = str(Path(home) / "bin" / "java") if home else "java"
    first = subprocess.run([java_bin, "-version"], capture_output=True, text=True).stderr.split("\n")[0]
    return first.split('"')[1] if '"' in first else ""


def java_options() -> str:
    """Options for the driver JVM: use the archive if there is one, build it if asked to."""
    dump = os.environ.get("DCDRILL_CDS_DUMP")
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump} -Xlog:cds=off -Xlog:cds+dynamic=off"
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} -Xlog:cds=off -Xlog:cds+dynamic=off" if path.exists() else ""
