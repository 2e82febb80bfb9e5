"""The identity side of the checker: which records are lost, doubled, misplaced or phantoms.

  0. scan: produced ∪ audit ∪ consumed narrowed to fixed-width columns (producer hash, seq,
     row kind, position hash, and what the other folds need) and read once
     (spark/jvm/Scan.java). It keeps the produced and audit rows packed in Spark's cache for
     step 2, and feeds the producer pass and reordering (spark/checker.py) as it streams.
  1. screen: the rows folded into bitmaps per 64 consecutive seqs of a producer (which seqs
     each ledger holds, and which it holds twice or more), with XOR certificates over the
     positions. Each task folds ~64 rows into one state before the shuffle; a bucket whose
     sets agree, with nothing doubled, and whose certificates cancel has nothing to report.
     Bad rows are counted here.
  2. identity pass: the rows of the other buckets only, and of those only the seqs the sets
     flag (a broadcast set; consumed rows only where they differ from the audit's), one fold
     per identity. Anomalous identities leave it with their flags and where their produced
     row sits (phase, DC and topic, partition, second), so no second look at the produced
     ledger is needed. Where the certificates, less the flagged seqs' shares, still differ,
     a second run looks at the bucket's other seqs.
Hashes (xxhash64) stand for producer ids and positions; a collision is a 2^-64 event.
Plain Parquet ledgers are narrowed on Spark's column batches in the JVM (spark/jvm/Columnar.java:
a string hashed once per dictionary entry), any other by a Spark SQL projection (narrow_ledger:
parsing, hashing, bad-row tests; the reference both are tested against); the folds are
hand-written JVM loops (spark/jvm/, compiled against pyspark's own jars by spark/kernels.py), because
on a small machine Spark's planning, code generation and JIT of generic aggregations cost more
than the data (docs/benchmarks.md has the timings of each step).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dcdrill.spark.ledgers import bad_row_sql

FIELD = 16  # bits per ledger in the packed occurrence count of one identity (Identity.java)


# The types of the narrowed rows' optional columns: a ledger leaves null what it does not fill.
# Their names and order are the scan's (Scan.COLUMNS), which narrow_ledger asks for by name.
OPTIONAL = {
    "send_ms": "long",
    "dt": "long",
    "partition": "int",
    "ack_ms": "long",
    "tp": "long",
    "dc": "string",
    "topic": "string",
    "g": "long",
    "offset": "long",
}


def row_kinds(spark) -> dict[str, int]:
    """The row kinds the folds tell apart, by name (Screen.KINDS): a produced row carries its
    status in its kind, and a bad row its ledger's bad kind."""
    return {name: i for i, name in enumerate(spark._jvm.dcdrill.Screen.KINDS)}


# Spark's xxhash64 of these columns, as SQL: one definition for the scan and for the Columns below.
POSITION = "xxhash64(topic, `partition`, `offset`, seq)"  # the seq too: see narrow_ledger
DC_TOPIC = "xxhash64(coalesce(dc, ''), topic)"
PARTITION_KEY = "xxhash64(topic, `partition`)"
GROUP_KEY = "xxhash64(topic, `partition`, producer_id)"


def narrow_ledger(df: DataFrame, ledger: str) -> DataFrame:
    """One ledger's rows as the scan reads them: 64-bit hashes instead of names (idh), the seq and
    the row's kind, a position only where one was promised (acknowledged) or observed (audit,
    consumed); produced rows add where they sit in the report's splits (send_ms, dt, partition)
    and what the producer pass needs (ack_ms, tp, the DC and topic names), audit rows what
    reordering needs (g, tp, offset). Bad rows get a null idh and their kind as seq, so they are
    counted per ledger, not matched (Scan.COLUMNS numbers the columns). Built as SQL text, one call to the JVM
    (the Column API made hundreds, a noticeable share of a small verify)."""
    kinds = row_kinds(df.sparkSession)
    # The seq is in the position hash: equal hashes then mean "this record at this position",
    # which the screen's XOR certificates need (two records swapping places must not cancel out).
    pos = POSITION
    if ledger == "produced":
        kind = (
            f"CASE status WHEN 'ok' THEN {kinds['produced_ok']} WHEN 'fail' THEN {kinds['produced_fail']} "
            f"ELSE {kinds['produced_info']} END"
        )
        pos = f"CASE WHEN status = 'ok' AND `offset` IS NOT NULL THEN {POSITION} END"
        extra = {
            "send_ms": "send_ms",
            "dt": DC_TOPIC,
            "partition": "`partition`",
            "ack_ms": "ack_ms",
            "tp": PARTITION_KEY,
            "dc": "dc",
            "topic": "topic",
        }
    elif ledger == "audit":
        kind, extra = str(kinds["audit"]), {"tp": PARTITION_KEY, "g": GROUP_KEY, "offset": "`offset`"}
    else:
        kind, extra = str(kinds["consumed"]), {}
    bad, bad_kind = bad_row_sql(ledger), kinds[f"{ledger}_bad"]
    columns = {
        "idh": f"CASE WHEN NOT {bad} THEN xxhash64(producer_id) END",
        "seq": f"CASE WHEN {bad} THEN {bad_kind} ELSE seq END",
        "kind": f"CAST(CASE WHEN {bad} THEN {bad_kind} ELSE {kind} END AS TINYINT)",
        "pos": pos,
        **extra,
    }
    return df.selectExpr(
        *[
            f"{columns.get(name) or f'CAST(NULL AS {OPTIONAL[name]})'} AS `{name}`"
            for name in df.sparkSession._jvm.dcdrill.Scan.COLUMNS
        ]
    )


# A Spark setting: "false" narrows every ledger in SQL, the reference the column-batch reading
# (spark/jvm/Columnar.java) is tested against.
COLUMNAR_SCAN = "spark.dcdrill.columnarScan"


def scan(
    P: DataFrame,
    A: DataFrame,
    C: DataFrame,
    partitions: int,
    faults: list[dict],
    plain: dict[str, DataFrame | None] | None = None,
    where: dict[str, dict] | None = None,
):
    """The one scan of the ledgers (spark/jvm/Scan.java): every fold below reads what it kept.
    `plain`: the ledgers as read, where ledgers.load found them plain Parquet; those are narrowed
    batch by batch in the JVM (spark/jvm/Columnar.java), the others in SQL (narrow_ledger).
    `where`: per ledger, the tests that keep its rows of `plain` (ledgers.load's "where").
    Lazy: the screen runs it. Release it (`.release()`) when the identity pass is done."""
    from dcdrill.spark.rollup import WORD_MS

    rows = None
    for df, ledger in ((P, "produced"), (A, "audit"), (C, "consumed")):
        some = ledger_rows(df, ledger, (plain or {}).get(ledger), (where or {}).get(ledger) or {})
        rows = some if rows is None else rows.union(some)
    starts, ends = fault_bounds(P.sparkSession, faults)
    return P.sparkSession._jvm.dcdrill.Scan.run(rows, partitions, starts, ends, WORD_MS)


def batch_columns(plain: DataFrame | None, ledger: str, where: dict | None = None) -> DataFrame | None:
    """The columns the JVM reads of a plain ledger batch by batch (Columnar.PRODUCED or LOGGED,
    then `where`'s); None when the ledger is not plain or COLUMNAR_SCAN is "false"."""
    if plain is None or plain.sparkSession.conf.get(COLUMNAR_SCAN, "true").lower() == "false":
        return None
    columnar = plain.sparkSession._jvm.dcdrill.Columnar
    read = list(columnar.PRODUCED if ledger == "produced" else columnar.LOGGED)
    return plain.select(*read, *[c for c in (where or {}) if c not in read])


def ledger_rows(df: DataFrame, ledger: str, plain: DataFrame | None, where: dict | None = None):
    """One ledger's narrowed rows, as the JVM's RDD: from Parquet's column batches when the
    ledger is plain and Spark plans a columnar scan of it (keeping the rows `where` keeps), else
    from the SQL narrowing of `df`."""
    kernels = df.sparkSession._jvm.dcdrill
    if (columns := batch_columns(plain, ledger, where)) is not None:
        rows = kernels.Columnar.rows(columns._jdf, ledger, where or {})
        if rows is not None:
            return rows
    return kernels.Scan.narrowedRows(narrow_ledger(df, ledger)._jdf)


BUCKET_BITS = 6  # the screen groups 64 consecutive seqs of one producer


@dataclass
class Screen:
    suspicious: object  # the JVM's list of buckets to look at (spark/jvm/Screen.java), with
    # whether their consumed rows mirror their audit rows, which seqs to
    # look at and their certificates
    totals: dict  # suspicious and unmirrored buckets, bad rows per ledger


def screen(scanned) -> Screen:
    """Bitmaps per 64 consecutive seqs of a producer: which seqs were produced ok / fail / info,
    written to the log, consumed; how many rows each ledger holds; and XOR certificates over the
    position hashes. A bucket is clean when the ok, audit and consumed sets are equal, nothing is
    doubled and the acknowledged, audit and consumed positions cancel out: every count is then 0
    for its records, so only the other buckets go through the identity pass.
    The folding runs in the JVM (spark/jvm/Screen.java) as the scan streams the rows, then one
    shuffle of the buckets' partial states, where each bucket is judged."""
    res = scanned.screen()
    return Screen(
        res, dict(zip(("suspicious", "unmirrored", "bad_p", "bad_a", "bad_c"), (int(t) for t in res.totals())))
    )


def dc_topic():
    """The producer's DC and the topic as one long key (names come back through `names`)."""
    return F.expr(DC_TOPIC)


def partition_key():
    return F.expr(PARTITION_KEY)


@dataclass
class Identities:
    anomalies: DataFrame | None  # identities whose positions need a second look (idh, seq,
    # mismatch_candidates, divergent_candidates): normally none;
    # None when no bucket was looked at
    totals: dict  # every identity count, bad-row counts, number of anomalous identities
    by_split: list[dict]  # the flags summed per (phase, dt, partition, send_sec) of the produced
    # row, with the first and last lost send time; keys are None without one
    examples: list[dict]  # the first lost or duplicated identities by send time (Identity.EXAMPLES):
    # {idh, seq, kind, send_ms, partition}; checker.examples names them


def identity_pass(scanned, C: DataFrame, scr: Screen, faults: list[dict]) -> Identities:
    """The flagged seqs of the suspicious buckets only (Screen.java says which), read back from what
    the scan kept and folded per identity in the JVM (spark/jvm/Identity.java) on a packed
    occurrence count (produced, audit and consumed rows in 16-bit fields of one long) and the
    lowest and highest position seen, one shuffle, then each identity's flags. A bucket whose
    certificates, less the flagged seqs' shares, still differ hides a misplaced record among its
    other seqs: a second run looks at those. The anomalies come back summed per split of their
    produced row (phase by send_ms, as checker.FINE says). Totals include the screen's (bad rows
    per ledger)."""
    spark = C.sparkSession
    counted = list(spark._jvm.dcdrill.Identity.COUNTED) + ["anomalous"]
    candidates = None  # a DataFrame per run, unioned: an empty one made up front costs a cold plan
    starts, ends = fault_bounds(spark, faults)
    by_split, examples, buckets = [], [], scr.suspicious
    while buckets is not None and buckets.totals()[0]:
        # The scan keeps no consumed rows: they are read again only when some bucket's consumed
        # rows differ from its audit rows (else the audit rows stand in for them).
        consumed = narrow_ledger(C, "consumed")._jdf if buckets.totals()[1] else None
        res = spark._jvm.dcdrill.Identity.run(scanned, consumed, buckets, starts, ends)
        by_split += [json.loads(line) for line in res.splits().splitlines()]
        examples += [json.loads(line) for line in res.examples().splitlines()]
        found = DataFrame(res.candidates(), spark)
        candidates = found if candidates is None else candidates.unionByName(found)
        buckets = res.again()
    totals = {k: sum(r[k] for r in by_split) for k in counted}
    examples.sort(key=lambda e: (e["send_ms"] is not None, e["send_ms"] or 0, e["seq"]))
    return Identities(
        candidates,
        {**totals, **scr.totals},
        [r for r in by_split if r["send_sec"] is not None],
        examples[: spark._jvm.dcdrill.Identity.EXAMPLES],
    )


def fault_bounds(spark, faults: list[dict]):
    """Each fault's start and end (the largest long while it is open), as the JVM's long arrays:
    what a row's phase is read from (checker.FINE)."""

    def longs(values):
        arr = spark.sparkContext._gateway.new_array(spark._jvm.long, len(values))
        for i, v in enumerate(values):
            arr[i] = v
        return arr

    return longs([f["start_ms"] for f in faults]), longs(
        [f["end_ms"] if f.get("end_ms") is not None else (1 << 63) - 1 for f in faults]
    )
