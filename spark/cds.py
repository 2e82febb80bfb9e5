"""The verifier's JVM: which JDK runs Spark, and a class-data-sharing archive for it.

JDK: Spark 4 runs on Java 17, 21 and 25. The newest of those found on the machine is used
(`DCDRILL_SPARK_JAVA_HOME` picks one, otherwise JAVA_HOME and then /usr/lib/jvm are searched),
because its JIT and collector are what a verify run mostly waits for: measured here, 10M
records verify in ~38 s on Temurin 25 against ~48 s on OpenJDK 17. Kafka keeps the system JDK.

Archive: Spark's driver loads some 15,000 classes before the first query; on a 2-core machine
that is seconds of every `dcdrill verify`. The JVM can map them from an archive dumped by an
earlier run (AppCDS, JDK 13+): measured here on JDK 17, session start 6.7 s -> 3.7 s and the
first query 3.2 s -> 1.9 s. The archive is tied to the JDK and to pyspark's jars, hence the
name; a stale or missing archive only costs the time back (the JVM loads classes itself).

    python -m spark.cds            build the archive (verifies two tiny records, then exits)
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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
    found = [(SUPPORTED.index(m), str(h)) for h in candidates
             if (m := _major(h)) in SUPPORTED and (h / "bin" / "java").exists()]
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


def cache_dir() -> Path:
    """Where `make setup` keeps what it fetched and built (DCDRILL_CACHE, else .cache/)."""
    return Path(os.environ.get("DCDRILL_CACHE", ROOT / ".cache"))


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

    home = java_home()
    java_bin = str(Path(home) / "bin" / "java") if home else "java"
    java = subprocess.run([java_bin, "-version"], capture_output=True, text=True).stderr.split("\n")[0]
    tag = "".join(ch if ch.isalnum() else "-" for ch in java.split('"')[1]) if '"' in java else "jdk"
    jar = kernel_jar()
    kernel = hashlib.sha256(jar.read_bytes()).hexdigest()[:8] if jar.exists() else "none"
    return cache_dir() / f"spark-cds-{pyspark.__version__}-{tag}-{kernel}.jsa"


def java_options() -> str:
    """Options for the driver JVM: use the archive if there is one, build it if asked to."""
    dump = os.environ.get("DCDRILL_CDS_DUMP")
    if dump:
        return f"-XX:ArchiveClassesAtExit={dump} -Xlog:cds=off -Xlog:cds+dynamic=off"
    path = archive_path()
    return f"-XX:SharedArchiveFile={path} -Xlog:cds=off -Xlog:cds+dynamic=off" if path.exists() else ""


def _record(run: Path) -> None:
    rows = {
        "produced": [{"producer_id": "p", "seq": i, "topic": "t", "partition": i % 2, "key": None, "send_ms": 1000 + i,
                      "status": "ok", "ack_ms": 1005 + i, "offset": i // 2, "error": None, "dc": "dc-a"}
                     for i in range(20)],
        "audit": [{"topic": "t", "partition": i % 2, "offset": i // 2, "producer_id": "p", "seq": i,
                   "timestamp_ms": 1000 + i} for i in range(19)],
        "consumed": [{"consumer_id": "c", "group": "g", "topic": "t", "partition": i % 2, "offset": i // 2,
                      "producer_id": "p", "seq": i, "consume_ms": 2000, "dc": "dc-b"} for i in range(20)],
    }
    for kind, rs in rows.items():
        (run / kind).mkdir(parents=True)
        (run / kind / "x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rs))
    (run / "topology.json").write_text(json.dumps({"profile": "consistency-first", "unclean_leader_election": False}))
    (run / "faults.jsonl").write_text(json.dumps({"fault": "kill-dc", "target": "dc-a", "start_ms": 1008,
                                                  "end_ms": 1012}) + "\n")


def exercise(tmp: Path) -> None:
    """What the archive should hold: a JSON Lines record and its Parquet copy, verified."""
    from spark import verify

    spark = verify.session()
    _record(tmp / "jsonl")
    (tmp / "parquet").mkdir()
    for name in ("topology.json", "faults.jsonl"):
        (tmp / "parquet" / name).write_bytes((tmp / "jsonl" / name).read_bytes())
    for kind in ("produced", "audit", "consumed"):
        spark.read.json(str(tmp / "jsonl" / kind)).coalesce(1).write.parquet(str(tmp / "parquet" / f"{kind}.tmp"))
        (tmp / "parquet" / kind).mkdir()
        for f in (tmp / "parquet" / f"{kind}.tmp").glob("*.parquet"):
            f.rename(tmp / "parquet" / kind / f.name)
    for record in ("jsonl", "parquet"):
        verify.verify(str(tmp / record), spark=spark)
    spark.stop()


def build() -> Path:
    """Run `exercise` in a JVM that dumps its loaded classes on exit."""
    path = archive_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dcdrill-cds-") as tmp:
        env = {**os.environ, "DCDRILL_CDS_DUMP": str(path) + ".tmp"}
        subprocess.run([sys.executable, "-m", "spark.cds", "--exercise", tmp], cwd=ROOT, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    Path(str(path) + ".tmp").replace(path)
    return path


if __name__ == "__main__":
    if sys.argv[1:2] == ["--exercise"]:
        exercise(Path(sys.argv[2]))
    else:
        print(f"spark class-data archive: {build()}")
