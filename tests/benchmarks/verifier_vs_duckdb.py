"""Verifier vs DuckDB on the same drill record, in the same run.

Generates a drill record of N produced records (consumed and audit ledgers of the same size,
Parquet, with a sprinkling of loss, duplicates and phantoms), then times
  * `dcdrill verify` (a fresh process: Spark start-up included), and
  * DuckDB computing acked_lost, acked_unseen, duplicates_in_log and phantoms,
checks that both agree, and prints the ratio. `--sizes 1000000 10000000` shows growth;
`--rounds 3` times the two in turn three times and quotes medians (the machine drifts).

`--floor` also times, in the same rounds, what any Spark verifier pays on this machine (each a
fresh process with the verifier's own session settings):
  * startup:     the Spark session and a one-row job, nothing read;
  * scan:        the identity columns (producer_id, seq) of the three ledgers read and folded,
                 no shuffle: the least work that can tell a lost record from a kept one;
  * four-counts: DuckDB's four counts in Spark, one shuffle on compact keys (a packed
                 occurrence count per identity), the design the goal has in mind.
and, as a fresh `dcdrill verify` too, the verifier's own fixed cost:
  * verify-10k:  `dcdrill verify` on a record of 10,000 produced records (same generator), where
                 the data costs next to nothing: the JVM, the cold planning, code generation and
                 JIT compilation of all its queries.

    .venv/bin/python tests/benchmarks/verifier_vs_duckdb.py [--sizes N ...] [--rounds R] [--floor]
                                                            [--format parquet|jsonl] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[2]


# Record shapes. `wide` is the benchmark's own: a producer per million records, 12 partitions,
# DuckDB's default row groups. `few` is the one a new user's 100M drill made (issue 26): 16
# producers, 24 partitions, each ledger one file of row groups of 1M rows, 0.05 % of acked
# records missing from the audit and 0.2 % indeterminate. `many` is thousands of small producers.
# `drill` is laid out as a drill writes: 16 producers sending all the time (record i is producer
# i % 16's seq i // 16), each record to a partition its key hashes to, offsets in send order per
# partition, and 0.05 % lost, 0.2 % indeterminate and 0.1 % duplicated at random positions, a
# phantom per 5000. `drill-heavy` is the same with 0.5 % of each kind (lost, indeterminate,
# duplicated, reordered: written ~64 sends late, phantom), `drill-5pct` with 5 % of each.
SHAPES = {
    "wide": {"producers": None, "partitions": 12, "row_group": None, "lost_every": 1000, "info_every": 0},
    "few": {"producers": 16, "partitions": 24, "row_group": 1_000_000, "lost_every": 2000, "info_every": 500},
    "many": {"producers": 4096, "partitions": 48, "row_group": 65_536, "lost_every": 1000, "info_every": 500},
    "drill": {
        "producers": 16,
        "partitions": 24,
        "row_group": 1_000_000,
        "lost_every": 2000,
        "info_every": 500,
        "dup_every": 997,
        "interleaved": True,
    },
    "drill-heavy": {
        "producers": 16,
        "partitions": 24,
        "row_group": 1_000_000,
        "lost_every": 200,
        "info_every": 200,
        "dup_every": 200,
        "reorder_every": 200,
        "phantom_every": 200,
        "interleaved": True,
    },
    "drill-5pct": {
        "producers": 16,
        "partitions": 24,
        "row_group": 1_000_000,
        "lost_every": 20,
        "info_every": 20,
        "dup_every": 20,
        "reorder_every": 20,
        "phantom_every": 20,
        "interleaved": True,
    },
}


def generate(run: Path, n: int, fmt: str, shape: str = "wide") -> None:
    """Every `lost_every`th record missing from the audit (acked, or indeterminate when it is also
    an `info_every`th), every 997th duplicated, a phantom per 5000 records; consumers see the
    audit log. Producers take contiguous ranges of seqs. An `interleaved` shape instead draws each
    kind at random positions at its own rate (SHAPES)."""
    sh = SHAPES[shape]
    per = 1_000_000 if sh["producers"] is None else -(-n // sh["producers"])
    parts = sh["partitions"]
    for d in ("produced", "consumed", "audit"):
        (run / d).mkdir(parents=True, exist_ok=True)
    (run / "topology.json").write_text(
        json.dumps(
            {
                "cluster": "bench",
                "profile": "consistency-first",
                "replication_factor": 3,
                "min_insync_replicas": 2,
                "unclean_leader_election": False,
                "acks": "all",
                "datacenters": [],
            }
        )
    )
    (run / "faults.jsonl").write_text(
        json.dumps({"fault": "kill-dc", "target": "dc-a", "start_ms": 1_700_000_300_000, "end_ms": 1_700_000_330_000})
        + "\n"
    )
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    con.execute("SET enable_progress_bar = false")
    if sh.get("interleaved"):  # at random positions: a hash of the record's number, one per kind
        lost, info, dup = (
            f"hash(i, {k}) % {sh[e]} = 0" for k, e in enumerate(("lost_every", "info_every", "dup_every"))
        )
        info = f"({info}) AND NOT ({lost})"
        p = sh["producers"]
        late = f"hash(i, 3) % {sh['reorder_every']} = 0" if sh.get("reorder_every") else "false"
        numbered = f"""
          SELECT 'p' || (i % {p})::VARCHAR AS producer_id, (i // {p})::BIGINT AS seq,
                 (hash(i // 7) % {parts})::INTEGER AS partition, i,
                 i + CASE WHEN {late} THEN {64 * p} ELSE 0 END AS written FROM range({n}) t(i)"""
        # A reordered record is written after the next sends of its producer to its partition.
        offset = "(row_number() OVER (PARTITION BY partition ORDER BY written, i) - 1)"
    else:
        lost, info, dup = f"i % {sh['lost_every']} = 7", f"i % {sh['info_every']} = 11", "i % 997 = 3"
        info = info if sh["info_every"] else "false"
        numbered = f"""
          SELECT 'p' || (i // {per})::VARCHAR AS producer_id, (i % {per})::BIGINT AS seq,
                 (i % {parts})::INTEGER AS partition, i FROM range({n}) t(i)"""
        offset = f"(i // {parts})"
    # A table where the offsets need a window (computed once), a view otherwise (as before).
    kind = "TABLE" if sh.get("interleaved") else "VIEW"
    con.execute(f"""CREATE {kind} records AS SELECT producer_id, seq, 'bench' AS topic, partition,
                   'k' || (i % 1000)::VARCHAR AS key, (1700000000000 + i // 20)::BIGINT AS send_ms,
                   ({info}) AS info, ({lost}) AS lost, ({dup}) AS dup, {offset}::BIGINT AS log_offset, i
                   FROM ({numbered})""")
    base = "SELECT * FROM records"
    row_group = f", ROW_GROUP_SIZE {sh['row_group']}" if sh["row_group"] else ""
    out = (
        (lambda name: f"'{run}/{name}/part.parquet' (FORMAT parquet{row_group})")
        if fmt == "parquet"
        else (lambda name: f"'{run}/{name}/part.jsonl' (FORMAT json)")
    )
    con.execute(f"""COPY (SELECT producer_id, seq, topic, partition, key, send_ms,
                   CASE WHEN info THEN 'info' ELSE 'ok' END AS status,
                   CASE WHEN info THEN NULL ELSE send_ms + 5 END AS ack_ms,
                   CASE WHEN info THEN NULL ELSE log_offset END AS "offset",
                   CASE WHEN info THEN 'timed out' END AS error, 'dc-a' AS dc FROM ({base})) TO {out("produced")}""")
    # The audit in log order, as dcdrill writes it: the log's body in one file, the duplicates'
    # later copies and the phantoms (higher offsets) in a second one (a union in one COPY does not
    # keep its branches' order at the seam).
    con.execute(f"""COPY (
        SELECT topic, partition, "offset", producer_id, seq, send_ms AS timestamp_ms FROM (
          SELECT topic, partition, log_offset AS "offset", producer_id, seq, send_ms, i, lost FROM ({base}))
        WHERE NOT lost {'ORDER BY partition, "offset"' if sh.get("interleaved") else ""}) TO {out("audit")}""")
    ghost_partition = f"(i % {parts})::INTEGER" if sh.get("interleaved") else "0"  # the old shapes' as they were
    con.execute(f"""COPY (
        SELECT topic, partition, log_offset + 100000000 AS "offset", producer_id, seq,
               send_ms AS timestamp_ms
          FROM ({base}) WHERE dup
        UNION ALL SELECT 'bench', {ghost_partition}, 200000000 + i, 'ghost', i, 0
          FROM range({n // sh.get("phantom_every", 5000)}) t(i)
      ) TO {out("audit").replace("/part.", "/tail.")}""")
    con.execute(f"""COPY (SELECT 'c1' AS consumer_id, 'g' AS "group", topic, partition, "offset", producer_id, seq,
                   timestamp_ms AS consume_ms, 'dc-b' AS dc FROM read_{"parquet" if fmt == "parquet" else "json"}(
                   '{run}/audit/*.{"parquet" if fmt == "parquet" else "jsonl"}')) TO {out("consumed")}""")


def duck(run: Path, fmt: str) -> tuple[float, dict]:
    reader = "read_parquet" if fmt == "parquet" else "read_json_auto"
    ext = "parquet" if fmt == "parquet" else "jsonl"
    t0 = time.monotonic()
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    con.execute("SET enable_progress_bar = false")
    q = f"""
      WITH p AS (SELECT producer_id, seq, status FROM {reader}('{run}/produced/*.{ext}')),
           a AS (SELECT producer_id, seq, count(*) AS n FROM {reader}('{run}/audit/*.{ext}') GROUP BY ALL),
           c AS (SELECT DISTINCT producer_id, seq FROM {reader}('{run}/consumed/*.{ext}'))
      SELECT
        (SELECT count(*) FROM p ANTI JOIN a USING (producer_id, seq) WHERE status = 'ok'),
        (SELECT count(*) FROM p ANTI JOIN c USING (producer_id, seq) WHERE status = 'ok'),
        (SELECT sum(n - 1) FROM a),
        (SELECT sum(n) FROM a ANTI JOIN p USING (producer_id, seq))"""
    lost, unseen, dups, phantoms = con.execute(q).fetchone()
    return time.monotonic() - t0, {
        "acked_lost": lost,
        "acked_unseen": unseen,
        "duplicates_in_log": int(dups),
        "phantoms": int(phantoms),
    }


def spark(run: Path, checkout: Path = ROOT) -> tuple[float, dict]:
    """`dcdrill verify` as `checkout` has it (`python -m` imports the dcdrill of its folder), with
    this checkout's tools (the kernel jar and the JVM's class-data archive), so only the code differs."""
    t0 = time.monotonic()
    env = {**os.environ, "DCDRILL_CACHE": str(ROOT / ".cache")} if checkout != ROOT else None
    res = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "verify", str(run), "--json"],
        capture_output=True,
        text=True,
        cwd=checkout,
        env=env,
    )
    took = time.monotonic() - t0
    if res.returncode not in (0, 1):
        raise SystemExit(f"verify failed: {res.stderr[-2000:]}")
    counts = json.loads((run / "report" / "summary.json").read_text())["counts"]
    return took, counts


FLOOR = ("startup", "scan", "four-counts")


def floor_program(mode: str, run: str) -> None:
    """One of the Spark floors (FLOOR), run in this process; prints its counts."""
    sys.path.insert(0, str(ROOT))
    from pyspark.sql import functions as F

    from dcdrill.spark.verify import session

    spark = session()
    read = (
        (lambda k: spark.read.parquet(f"{run}/{k}"))
        if Path(run, "produced", "part.parquet").exists()
        else (lambda k: spark.read.json(f"{run}/{k}"))
    )
    if mode == "startup":
        print(spark.range(1).count())
    elif mode == "scan":
        print(
            [
                read(k).select(F.bit_xor(F.xxhash64("producer_id").bitwiseXOR(F.col("seq")))).first()[0]
                for k in ("produced", "audit", "consumed")
            ]
        )
    else:  # occurrences per identity in 16-bit fields: ok-produced, other-produced, audit, consumed

        def ledger(kind, value):
            return read(kind).select(F.xxhash64("producer_id").alias("h"), "seq", value.cast("long").alias("v"))

        p = ledger("produced", F.when(F.col("status") == "ok", 1).otherwise(1 << 16))
        g = (
            p.union(ledger("audit", F.lit(1 << 32)))
            .union(ledger("consumed", F.lit(1 << 48)))
            .groupBy("h", "seq")
            .agg(F.sum("v").alias("v"))
        )
        field = lambda i: F.shiftright("v", 16 * i).bitwiseAND(0xFFFF)  # noqa: E731
        ok, produced, a, c = field(0) > 0, field(0) + field(1), field(2), field(3)
        print(
            g.agg(
                F.sum(F.when(ok & (a == 0), 1).otherwise(0)),
                F.sum(F.when(ok & (c == 0), 1).otherwise(0)),
                F.sum(F.greatest(a - 1, F.lit(0))),
                F.sum(F.when(produced == 0, a).otherwise(0)),
            ).first()
        )
    spark.stop()


def floor(run: Path, mode: str) -> float:
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, __file__, "--floor-program", mode, str(run)], capture_output=True, text=True, cwd=ROOT
    )
    if res.returncode:
        raise SystemExit(f"spark floor {mode} failed: {res.stderr[-2000:]}")
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000_000])
    ap.add_argument("--format", choices=["parquet", "jsonl"], default="parquet")
    ap.add_argument(
        "--shape", choices=sorted(SHAPES), nargs="+", default=["wide"], help="the records' shapes (SHAPES above)"
    )
    ap.add_argument("--reuse", type=Path, metavar="DIR", help="time a record kept by an earlier --keep run")
    ap.add_argument("--rounds", type=int, default=1, help="time DuckDB and verify in turn this many times")
    ap.add_argument("--floor", action="store_true", help="also time Spark's floors (see above) in each round")
    ap.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="also time another checkout's verify in each round, alternating (git worktree add CHECKOUT REV)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the generated records (their folder is printed)")
    ap.add_argument("--floor-program", nargs=2, metavar=("MODE", "RUN"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.floor_program:
        return floor_program(*args.floor_program)
    if args.reuse and (len(args.shape) > 1 or len(args.sizes) > 1):
        ap.error("--reuse times one kept record: give one --shape and one --sizes")
    table = []
    for shape in args.shape:
        table += bench(args, shape)
    if len(table) > 1:
        print("\n| shape | records | anomalies | DuckDB | `dcdrill verify` | ratio |")
        print("| --- | --: | --: | --: | --: | --: |")
        for shape, n, anomalies, d_s, s_s, ratio in table:
            print(f"| {shape} | {n:,} | {anomalies:,} | {d_s:.2f} s | {s_s:.2f} s | {ratio:.2f}x |")


def bench(args, shape: str) -> list[tuple]:
    """One shape at each size, --rounds times; its table rows."""
    rows, table = [], []
    for n in args.sizes:
        run = args.reuse or Path(tempfile.mkdtemp(prefix=f"dcdrill-bench-{shape}-{n}-"))
        t0 = time.monotonic()
        if not args.reuse:
            generate(run, n, args.format, shape)
        gen = time.monotonic() - t0
        ducks, verifies, ratios, agree = [], [], [], True
        theirs: list[float] = []  # --against: the other checkout's ratio to DuckDB, round by round
        floors: dict[str, list[float]] = {m: [] for m in (FLOOR + ("verify-10k",) if args.floor else ())}
        small = Path(tempfile.mkdtemp(prefix="dcdrill-bench-10k-")) if args.floor else None
        if small:
            generate(small, 10_000, args.format)
        for r in range(args.rounds):
            d_s, d_counts = duck(run, args.format)
            s_s, s_counts = spark(run)
            agree = agree and all(s_counts[k] == v for k, v in d_counts.items())
            ducks.append(d_s), verifies.append(s_s), ratios.append(s_s / d_s)
            if args.against:
                o_s, o_counts = spark(run, args.against)
                agree = agree and o_counts == s_counts
                theirs.append(o_s / d_s)
            for mode, times in floors.items():
                times.append((spark(small)[0] if mode == "verify-10k" else floor(run, mode)) / d_s)
            if args.rounds > 1:
                print(
                    f"  round {r + 1}: duckdb {d_s:6.2f}s  dcdrill verify {s_s:6.2f}s  ratio {s_s / d_s:5.2f}x"
                    + (f"  {args.against.name} {theirs[-1]:5.2f}x" if theirs else "")
                    + "".join(f"  {m} {t[-1]:4.2f}x" for m, t in floors.items()),
                    flush=True,
                )
        d_s, s_s = statistics.median(ducks), statistics.median(verifies)
        rows.append((n, d_s, s_s))
        anomalies = sum(d_counts.values()) + s_counts.get("reordered", 0) + s_counts.get("indeterminate", 0)
        table.append((shape, n, anomalies, d_s, s_s, statistics.median(ratios)))
        print(
            f"N={n:>11,} ({args.format}, {shape}, generated in {gen:.1f}s, medians of {args.rounds}): "
            f"duckdb {d_s:6.2f}s  "
            f"dcdrill verify {s_s:6.2f}s  ratio {statistics.median(ratios):5.2f}x  counts agree: {agree} {d_counts}",
            flush=True,
        )
        if theirs:
            mine, other = statistics.median(ratios), statistics.median(theirs)
            print(f"  against {args.against}: ratio {other:5.2f}x there, {mine:5.2f}x here: {mine / other:5.3f} of it")
        for mode, times in floors.items():
            print(f"  spark floor {mode:<11} {statistics.median(times):5.2f}x DuckDB's time (median of {len(times)})")
        if args.keep or args.reuse:
            print(f"  kept: {run}")
        else:
            shutil.rmtree(run)
        if small:
            shutil.rmtree(small)
    if len(rows) > 1:
        (n0, _, s0), (n1, _, s1) = rows[0], rows[-1]
        print(f"growth ({shape}): {n1 / n0:.0f}x records -> {s1 / s0:.2f}x verify time")
    return table


if __name__ == "__main__":
    main()
