"""The identity side of the checker: which records are lost, doubled, misplaced or phantoms.

  1. screen: produced ∪ audit ∪ consumed narrowed to fixed-width columns (producer hash, seq,
     row kind, position hash) and folded into bitmaps per 64 consecutive seqs of a producer,
     with XOR certificates over the positions. Each task folds ~64 rows into one state before
     the shuffle; a bucket whose sets agree and whose certificates cancel has nothing to
     report. Bad rows are counted here.
  2. identity pass: the rows of the other buckets only (a broadcast set; consumed rows only
     where they differ from the audit's), one fold per identity. Anomalous identities
     leave it with their flags and where their produced row sits (phase, DC and topic,
     partition, second), so no second look at the produced ledger is needed.
Hashes (xxhash64) stand for producer ids and positions; a collision is a 2^-64 event.
Spark SQL narrows the ledgers (a projection: parsing, hashing, bad-row tests); the folds are
hand-written JVM loops (spark/jvm/, compiled by `make setup` against pyspark's own jars), because
on a small machine Spark's planning, code generation and JIT of generic aggregations cost more
than the data: a 10M-record verify went from 36.5 s to 30.1 s with the screen alone moved.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark.record import CORRUPT, REQUIRED, STATUSES

# Row kinds in the identity shuffle: the produced ledger's status travels in the kind.
P_OK, P_FAIL, P_INFO, A_ROW, C_ROW, P_BAD, A_BAD, C_BAD = range(8)
FIELD = 16  # bits per ledger in the packed occurrence count of one identity (Identity.java)


def bad_row(kind: str):
    """A row that did not parse or lacks a required column (verify.py names the file and line)."""
    cond = F.col(CORRUPT).isNotNull()
    for col in REQUIRED[kind]:
        cond = cond | F.col(col).isNull()
    if kind == "produced":
        cond = cond | ~F.col("status").isin(*STATUSES)
    return cond


def narrow(P: DataFrame, A: DataFrame, C: DataFrame, read_consumed: bool = True) -> DataFrame:
    """Every row of the three ledgers as (idh, seq, kind, pos, send_ms, dt, partition): 64-bit
    hashes instead of names, a position only where one was promised (acknowledged) or observed
    (audit, consumed), and where a produced row sits in the report's splits, so anomalies need no
    second look at the produced ledger. Bad rows get a null idh and their kind as seq, so they
    are counted per ledger, not matched. `read_consumed` False: no bucket needs the consumed
    ledger (the audit rows stand in for it), so it is not read."""
    status = F.col("status")

    def rows(df, ledger, kind, bad_kind, pos):
        bad = bad_row(ledger)
        where = [F.col("send_ms"), dc_topic(), F.col("partition")] if ledger == "produced" else \
            [F.lit(None).cast("long"), F.lit(None).cast("long"), F.lit(None).cast("int")]
        return df.select(F.when(~bad, F.xxhash64("producer_id")).alias("idh"),
                         F.when(bad, bad_kind).otherwise(F.col("seq")).alias("seq"),
                         F.when(bad, bad_kind).otherwise(kind).cast("byte").alias("kind"), pos.alias("pos"),
                         *[c.alias(n) for c, n in zip(where, ("send_ms", "dt", "partition"))])

    # The seq is hashed in too: equal hashes then mean "this record at this position", which the
    # screen's XOR certificates need (two records swapping places must not cancel out).
    pos = F.xxhash64("topic", "partition", "offset", "seq")
    p_kind = F.when(status == "ok", P_OK).when(status == "fail", P_FAIL).otherwise(P_INFO)
    p_pos = F.when((status == "ok") & F.col("offset").isNotNull(), pos)
    out = rows(P, "produced", p_kind, P_BAD, p_pos).unionByName(rows(A, "audit", A_ROW, A_BAD, pos))
    return out.unionByName(rows(C, "consumed", C_ROW, C_BAD, pos)) if read_consumed else out


BUCKET_BITS = 6  # the screen groups 64 consecutive seqs of one producer


@dataclass
class Screen:
    suspicious: object  # the JVM's list of buckets to look at (spark/jvm/Screen.java), with
                        # whether their consumed rows mirror their audit rows
    totals: dict        # suspicious and unmirrored buckets, bad rows per ledger


def screen(rows: DataFrame, partitions: int) -> Screen:
    """Bitmaps per 64 consecutive seqs of a producer: which seqs were produced ok / fail / info,
    written to the log, consumed; how many rows each ledger holds; and XOR certificates over the
    position hashes. A bucket is clean when the ok, audit and consumed sets are equal, nothing is
    doubled and the acknowledged, audit and consumed positions cancel out: every count is then 0
    for its records, so only the other buckets go through the identity pass.
    The folding runs in the JVM (spark/jvm/Screen.java): one loop per task over the narrowed rows,
    then one shuffle of the buckets' partial states, where each bucket is judged."""
    res = rows.sparkSession._jvm.dcdrill.Screen.run(rows.select("idh", "seq", "kind", "pos")._jdf, partitions)
    return Screen(res, dict(zip(("suspicious", "unmirrored", "bad_p", "bad_a", "bad_c"), (int(t) for t in res.totals()))))


def dc_topic():
    """The producer's DC and the topic as one long key (names come back through `names`)."""
    return F.xxhash64(F.coalesce(F.col("dc"), F.lit("")), F.col("topic"))


@dataclass
class Identities:
    anomalies: DataFrame  # identities whose positions need a second look (idh, seq,
                          # mismatch_candidates, divergent_candidates): normally none
    totals: dict          # every identity count, bad-row counts, number of anomalous identities
    by_split: list[dict]  # the flags summed per (phase, dt, partition, send_sec) of the produced
                          # row, with the first and last lost send time; keys are None without one


def identity_pass(P: DataFrame, A: DataFrame, C: DataFrame, scr: Screen, partitions: int,
                  faults: list[dict]) -> Identities:
    """The rows of the suspicious buckets only, folded per identity in the JVM
    (spark/jvm/Identity.java) on a packed occurrence count (produced, audit and consumed rows in
    16-bit fields of one long) and the lowest and highest position seen, one shuffle, then each
    identity's flags. The anomalies come back summed per split of their produced row (phase by
    send_ms, as checker.FINE says). Totals include the screen's (bad rows per ledger)."""
    spark = P.sparkSession
    counted = list(spark._jvm.dcdrill.Identity.COUNTED) + ["anomalous"]
    if not scr.totals["suspicious"]:
        empty = spark.createDataFrame([], "idh long, seq long, mismatch_candidates int, divergent_candidates int")
        return Identities(empty, {**dict.fromkeys(counted, 0), **scr.totals}, [])
    rows = narrow(P, A, C, read_consumed=scr.totals["unmirrored"] > 0)
    starts, ends = fault_bounds(spark, faults)
    res = spark._jvm.dcdrill.Identity.run(rows._jdf, scr.suspicious, partitions, starts, ends)
    by_split = [json.loads(line) for line in res.splits().splitlines()]
    totals = {k: sum(r[k] for r in by_split) for k in counted}
    return Identities(DataFrame(res.candidates(), spark), {**totals, **scr.totals},
                      [r for r in by_split if r["send_sec"] is not None])


def fault_bounds(spark, faults: list[dict]):
    """Each fault's start and end (the largest long while it is open), as the JVM's long arrays:
    what a row's phase is read from (checker.FINE)."""
    def longs(values):
        arr = spark.sparkContext._gateway.new_array(spark._jvm.long, len(values))
        for i, v in enumerate(values):
            arr[i] = v
        return arr

    return longs([f["start_ms"] for f in faults]), \
        longs([f["end_ms"] if f.get("end_ms") is not None else (1 << 63) - 1 for f in faults])
