"""The JSON Lines ledger reader: lines through from_json (today's: a line holding an array of
objects is bad input) against Spark's JSON source (faster to write, but it turns such a line
into several rows), timed in turn on the same record, in one Spark session, with the same counts.

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

from pyspark.sql import types as T  # noqa: E402

from spark import ledgers, verify  # noqa: E402
from tests.benchmarks.verifier_vs_duckdb import generate  # noqa: E402

FROM_JSON = ledgers.load


def json_source(spark, run_dir, kind):
    """The reader before: Spark's JSON data source, PERMISSIVE."""
    files, fmt = ledgers.ledger_files(spark, run_dir, kind)
    schema = ledgers.SCHEMAS[kind]
    struct = T.StructType([T.StructField(c, t) for c, t in schema.items()] + [T.StructField(ledgers.CORRUPT, T.StringType())])
    df = spark.read.schema(struct).option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", ledgers.CORRUPT) \
        .json(files)
    return df, {"files": files, "format": fmt, "torn": sum(ledgers.torn_last_line(spark, f) for f in files),
                "empty": False}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dcdrill-jsonl-"))
    try:
        generate(tmp / "run", a.size, "jsonl")
        spark = verify.session()
        times = {"from_json": [], "json source": []}
        counts = {}
        for r in range(a.rounds + 1):  # the first round warms the JVM up and is not counted
            for name, reader in (("from_json", FROM_JSON), ("json source", json_source)):
                verify.load = reader
                t0 = time.monotonic()
                _, summary = verify.verify(str(tmp / "run"), spark=spark)
                if r:
                    times[name].append(time.monotonic() - t0)
                counts[name] = summary["counts"]
        assert counts["from_json"] == counts["json source"]
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{a.size:,} records, JSON Lines, median of {a.rounds}: from_json {med['from_json']:.1f} s, "
              f"json source {med['json source']:.1f} s, ratio {med['from_json'] / med['json source']:.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
