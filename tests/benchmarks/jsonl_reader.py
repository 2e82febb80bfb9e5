"""The JSON Lines ledger reader, four ways, timed in turn on the same record in one Spark
session, with the same counts:
  * today's: Spark's JSON source, plus a byte pass over the lines in the JVM (spark/jvm/Lines.java)
    that finds a line holding an array, a key twice or text after its object (RECORD.md: one
    object per line, no key twice);
  * the array pass: the JSON source plus a SQL text pass for array lines only (the reader before);
  * the JSON source alone (blind to all three);
  * every line through from_json (marks an array line corrupt by itself).

    .venv/bin/python tests/benchmarks/jsonl_reader.py [--size N] [--rounds R]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

from dcdrill.spark import ledgers, session, verify  # noqa: E402
from tests.benchmarks.verifier_vs_duckdb import generate  # noqa: E402

TODAY = ledgers.load


def from_json(spark, record, kind):
    from pyspark.sql import functions as F

    files, fmt = record.ledger_files(kind)
    struct = T.StructType(
        [T.StructField(c, t) for c, t in ledgers.SCHEMAS[kind].items()]
        + [T.StructField(ledgers.CORRUPT, T.StringType())]
    )
    df = (
        spark.read.text(files)
        .select(
            F.from_json("value", struct, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": ledgers.CORRUPT}).alias(
                "r"
            )
        )
        .select("r.*")
    )
    return df, {"files": files, "format": fmt, "torn": sum(record.torn_last_line(f) for f in files), "empty": False}


def json_source(spark, record, kind):
    """The reader before: Spark's JSON data source, PERMISSIVE, no text pass."""
    files, fmt = record.ledger_files(kind)
    schema = ledgers.SCHEMAS[kind]
    struct = T.StructType(
        [T.StructField(c, t) for c, t in schema.items()] + [T.StructField(ledgers.CORRUPT, T.StringType())]
    )
    df = (
        spark.read.schema(struct)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", ledgers.CORRUPT)
        .json(files)
    )
    return df, {"files": files, "format": fmt, "torn": sum(record.torn_last_line(f) for f in files), "empty": False}


def array_pass(spark, record, kind):
    """The reader before the line screen: the JSON source, and a SQL text pass for array lines."""
    df, info = json_source(spark, record, kind)
    files = info["files"]
    if spark.read.text(files).filter(F.ltrim("value").startswith("[")).limit(1).count():
        raise ledgers.BadInput(ledgers.locate_problem(record, files, kind))
    return df, info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dcdrill-jsonl-"))
    try:
        generate(tmp / "run", a.size, "jsonl")
        spark = session.session()
        readers = {"today": TODAY, "array pass": array_pass, "json source": json_source, "from_json": from_json}
        times = {name: [] for name in readers}
        counts = {}
        for r in range(a.rounds + 1):  # the first round warms the JVM up and is not counted
            for name, reader in readers.items():
                verify.load = reader
                t0 = time.monotonic()
                summary = verify.verify(str(tmp / "run"), spark=spark)
                if r:
                    times[name].append(time.monotonic() - t0)
                counts[name] = summary["counts"]
        assert counts["today"] == counts["array pass"] == counts["json source"] == counts["from_json"]
        med = {k: statistics.median(v) for k, v in times.items()}
        base = med["json source"]
        print(
            f"{a.size:,} records, JSON Lines, verify time, median of {a.rounds}: "
            + ", ".join(f"{k} {v:.1f} s ({v / base:.2f}x)" for k, v in med.items())
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
