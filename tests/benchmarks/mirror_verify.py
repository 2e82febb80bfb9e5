"""The replicated-stack verify against the stretched verify of the same source ledgers.

Generates the verifier benchmark's drill record (tests/benchmarks/verifier_vs_duckdb.py: N
produced records, Parquet) as a stretched record, then the same ledgers as a replicated record:
the audit becomes east's (`audit/east.parquet`), the produced and consumed rows name east as
their cluster, and a copy of the audit is in west (`audit/west.parquet`,
topic `east.bench`, appended 200 ms later, every 2000th record not copied and every 5000th copied
twice), with a failover 5 s into the fault. Times `dcdrill verify` (a fresh process each) on
both, in turn, `--rounds` times, and prints the medians and their ratio; the issue's goal is at
most 1.5x. Also checks the mirror counts against what was generated.

    .venv/bin/python tests/benchmarks/mirror_verify.py [--size 10000000] [--rounds 3] [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "benchmarks"))

from verifier_vs_duckdb import generate, spark  # noqa: E402

FAULT_START = 1_700_000_300_000


def replicate(stretched: Path, run: Path) -> dict:
    """The replicated record beside the stretched one; returns the mirror counts it must give."""
    shutil.copytree(stretched, run)
    (run / "report").exists() and shutil.rmtree(run / "report")
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    # east's log is one file, audit/east.parquet: the generator's log and its tail of duplicates
    # and phantoms (a second file, so that DuckDB keeps each in log order), in that order.
    parts = sorted((run / "audit").glob("*.parquet"), key=lambda f: f.name != "part.parquet")
    con.execute(
        f"COPY (SELECT * FROM read_parquet({[str(f) for f in parts]})) TO '{run}/audit/east.parquet' (FORMAT parquet)"
    )
    for f in parts:
        f.unlink()
    # RECORD.md: a replicated record's produced and consumed rows name their cluster (here every
    # producer and the group before its failover are east's); the home counts keep those rows.
    for kind in ("produced", "consumed"):
        files = sorted((run / kind).glob("*.parquet"))
        con.execute(
            f"COPY (SELECT *, 'east' AS cluster FROM read_parquet({[str(f) for f in files]})) "
            f"TO '{run}/{kind}/east.parquet' (FORMAT parquet)"
        )
        for f in files:
            f.unlink()
    src = f"read_parquet('{run}/audit/east.parquet')"
    con.execute(f"""COPY (
        SELECT 'east.' || topic AS topic, partition, "offset", producer_id, seq, timestamp_ms + 200 AS timestamp_ms
          FROM {src} WHERE producer_id <> 'ghost' AND seq % 2000 <> 11
        UNION ALL SELECT 'east.' || topic, partition, "offset" + 300000000, producer_id, seq, timestamp_ms + 900
          FROM {src} WHERE producer_id <> 'ghost' AND seq % 5000 = 13 AND seq % 2000 <> 11
      ) TO '{run}/audit/west.parquet' (FORMAT parquet)""")
    topo = json.loads((run / "topology.json").read_text())
    topo.update(
        {
            "cluster": "east",
            "datacenters": [{"name": "dc-a", "brokers": 2, "zookeepers": 0}],
            "clusters": {"east": {"datacenters": [{"name": "dc-a"}]}, "west": {"datacenters": [{"name": "dc-b"}]}},
            "mirrors": {"east->west": {"source": "east", "target": "west", "remote_topic_prefix": "east."}},
        }
    )
    (run / "topology.json").write_text(json.dumps(topo))
    (run / "failovers.jsonl").write_text(
        json.dumps({"group": "g", "from": "east", "to": "west", "at_ms": FAULT_START + 5000, "topic": "east.bench"})
        + "\n"
    )
    # What the copy must show: acknowledged identities in east's log, and the ones west lacks.
    kept = f"(SELECT DISTINCT producer_id, seq FROM {src} WHERE producer_id <> 'ghost')"
    acked = f"(SELECT producer_id, seq FROM read_parquet('{run}/produced/*.parquet') WHERE status = 'ok')"
    (not_mirrored,) = con.execute(
        f"SELECT count(*) FROM {acked} a SEMI JOIN {kept} k USING (producer_id, seq) WHERE seq % 2000 = 11"
    ).fetchone()
    # every east row of those identities is copied once more (an identity twice in east: twice more)
    (dups,) = con.execute(f"SELECT count(*) FROM {src} WHERE producer_id <> 'ghost' AND seq % 5000 = 13").fetchone()
    return {"not_mirrored": not_mirrored, "replication_duplicates": dups}


def verify(run: Path) -> tuple[float, dict]:
    """A fresh `dcdrill verify` (the DuckDB benchmark's timing), and the whole summary it wrote."""
    took, _ = spark(run)
    return took, json.loads((run / "report" / "summary.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dcdrill-mirror-bench-"))
    try:
        stretched, replicated = tmp / "stretched", tmp / "replicated"
        t0 = time.monotonic()
        generate(stretched, args.size, "parquet")
        expected = replicate(stretched, replicated)
        print(f"generated {args.size:,} records in {time.monotonic() - t0:.0f}s; expected {expected}", flush=True)
        times = {"stretched": [], "replicated": []}
        for r in range(args.rounds):
            for name, run in (("stretched", stretched), ("replicated", replicated)):
                took, summary = verify(run)
                times[name].append(took)
                print(f"round {r + 1}: {name} verify {took:.1f}s", flush=True)
            m = summary["mirrors"]["east->west"]["counts"]
            got = {k: m[k] for k in expected}
            assert got == expected, (got, expected)
            assert (
                summary["counts"]["acked_lost"]
                == json.loads((stretched / "report" / "summary.json").read_text())["counts"]["acked_lost"]
            )
        s, rep = statistics.median(times["stretched"]), statistics.median(times["replicated"])
        print(
            f"{args.size:,} source records, median of {args.rounds}: stretched {s:.1f}s, replicated (mirrors "
            f"included) {rep:.1f}s, ratio {rep / s:.2f}x (goal <= 1.5x); mirror counts as generated: {expected}"
        )
        if args.keep:
            print(f"kept: {tmp}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
