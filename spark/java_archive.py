"""Builds the verifier JVM's class-data archive (spark/java_runtime.py says why): verifies two tiny
records, a JSON Lines one and its Parquet copy, in a JVM that dumps its loaded classes on exit.

    python -m dcdrill.spark.java_archive        (make setup runs it once per JDK, pyspark and kernel jar)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from pyspark.sql import types as T

from dcdrill.infra.constants import PACKAGE
from dcdrill.spark import session, verify
from dcdrill.spark.java_runtime import archive_path
from dcdrill.spark.ledgers import SCHEMAS


def _record(run: Path) -> None:
    rows = {
        "produced": [
            {
                "producer_id": "p",
                "seq": i,
                "topic": "t",
                "partition": i % 2,
                "key": None,
                "send_ms": 1000 + i,
                "status": "ok",
                "ack_ms": 1005 + i,
                "offset": i // 2,
                "error": None,
                "dc": "dc-a",
            }
            for i in range(20)
        ],
        "audit": [
            {"topic": "t", "partition": i % 2, "offset": i // 2, "producer_id": "p", "seq": i, "timestamp_ms": 1000 + i}
            for i in range(19)
        ],
        "consumed": [
            {
                "consumer_id": "c",
                "group": "g",
                "topic": "t",
                "partition": i % 2,
                "offset": i // 2,
                "producer_id": "p",
                "seq": i,
                "consume_ms": 2000,
                "dc": "dc-b",
            }
            for i in range(20)
        ],
    }
    for kind, rs in rows.items():
        (run / kind).mkdir(parents=True)
        (run / kind / "x.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rs))
    (run / "topology.json").write_text(json.dumps({"profile": "consistency-first", "unclean_leader_election": False}))
    (run / "faults.jsonl").write_text(
        json.dumps({"fault": "kill-dc", "target": "dc-a", "start_ms": 1008, "end_ms": 1012}) + "\n"
    )


def exercise(tmp: Path) -> None:
    """What the archive should hold: a JSON Lines record and its Parquet copy, verified. The JVM
    writes the archive as it exits, so this waits for it to end (`build` renames the file next)."""
    with session.spark_scope(end_jvm=True):
        _verify_both(tmp, session.session())


def _verify_both(tmp: Path, spark) -> None:
    _record(tmp / "jsonl")
    (tmp / "parquet").mkdir()
    for name in ("topology.json", "faults.jsonl"):
        (tmp / "parquet" / name).write_bytes((tmp / "jsonl" / name).read_bytes())
    for kind in ("produced", "audit", "consumed"):
        # RECORD.md's types, so that the scan reads this copy batch by batch (spark/jvm/Columnar.java)
        schema = T.StructType([T.StructField(c, t) for c, t in SCHEMAS[kind].items()])
        spark.read.schema(schema).json(str(tmp / "jsonl" / kind)).coalesce(1).write.parquet(
            str(tmp / "parquet" / f"{kind}.tmp")
        )
        (tmp / "parquet" / kind).mkdir()
        for f in (tmp / "parquet" / f"{kind}.tmp").glob("*.parquet"):
            f.rename(tmp / "parquet" / kind / f.name)
    for record in ("jsonl", "parquet"):
        verify.verify(str(tmp / record), spark=spark)


def build() -> Path:
    """Run `exercise` in a JVM that dumps its loaded classes on exit."""
    path = archive_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dcdrill-cds-") as tmp:
        env = {**os.environ, "DCDRILL_CDS_DUMP": str(path) + ".tmp"}
        subprocess.run(
            [sys.executable, "-m", "dcdrill.spark.java_archive", "--exercise", tmp],
            cwd=PACKAGE.parent,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    dumped = Path(str(path) + ".tmp")
    if not dumped.exists():
        raise SystemExit(f"the verifier's JVM ended without writing its class-data archive ({dumped})")
    dumped.replace(path)
    for stale in path.parent.glob("spark-cds-*.jsa"):  # archives for another JDK, pyspark or kernel jar
        if stale != path:
            stale.unlink()
    return path


if __name__ == "__main__":
    if sys.argv[1:2] == ["--exercise"]:
        exercise(Path(sys.argv[2]))
    else:
        print(f"spark class-data archive: {build()}")
