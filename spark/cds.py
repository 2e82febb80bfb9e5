"""A class-data-sharing archive for the verifier's JVM (`make setup` builds it).

Spark's driver loads some 15,000 classes before the first query; on a 2-core machine that is
seconds of every `dcdrill verify`. The JVM can map them from an archive dumped by an earlier
run (AppCDS, JDK 13+): measured here, session start 6.7 s -> 3.7 s and the first query
3.2 s -> 1.9 s. The archive is tied to the JDK and to pyspark's jars, hence the name; a stale
or missing archive only costs the time back (the JVM falls back to loading classes).

    python -m spark.cds            build the archive (verifies two tiny records, then exits)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def archive_path() -> Path:
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.split("\n")[0]
    tag = "".join(ch if ch.isalnum() else "-" for ch in java.split('"')[1]) if '"' in java else "jdk"
    return Path(os.environ.get("DCDRILL_CACHE", ROOT / ".cache")) / f"spark-cds-{pyspark.__version__}-{tag}.jsa"


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
