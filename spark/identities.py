"""The identity side of the checker: which records are lost, doubled, misplaced or phantoms.

  1. screen: produced ∪ audit ∪ consumed narrowed to fixed-width columns (producer hash, seq,
     row kind, position hash) and folded into bitmaps per 64 consecutive seqs of a producer,
     with XOR certificates over the positions. Map-side aggregation turns ~64 rows into one
     before the shuffle; a bucket whose sets agree and whose certificates cancel has nothing to
     report. Bad rows are counted here.
  2. identity pass: the rows of the other buckets only (a broadcast filter; consumed rows only
     where they differ from the audit's), one aggregation per identity. Anomalous identities
     leave it with their flags and where their produced row sits (phase, DC and topic,
     partition, second), so no second look at the produced ledger is needed.
Hashes (xxhash64) stand for producer ids and positions; a collision is a 2^-64 event.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark.record import CORRUPT, REQUIRED, STATUSES

# Row kinds in the identity shuffle: the produced ledger's status travels in the kind.
P_OK, P_FAIL, P_INFO, A_ROW, C_ROW, P_BAD, A_BAD, C_BAD = range(8)
FLAGS = ("acked_lost", "acked_unseen", "failed_present", "indeterminate_present", "duplicates_in_log",
         "duplicates_delivered")
IDENTITY_TOTALS = FLAGS + ("phantoms", "ack_offset_mismatch", "mismatch_candidates", "divergent_candidates",
                           "produced_twice", "too_many_copies", "anomalous")
BROADCAST_ROWS = 2_000_000  # suspicious buckets up to this many are broadcast to the identity pass
FIELD = 16  # bits per ledger in the packed occurrence count of one identity


def bad_row(kind: str):
    """A row that did not parse or lacks a required column (verify.py names the file and line)."""
    cond = F.col(CORRUPT).isNotNull()
    for col in REQUIRED[kind]:
        cond = cond | F.col(col).isNull()
    if kind == "produced":
        cond = cond | ~F.col("status").isin(*STATUSES)
    return cond


def narrow(P: DataFrame, A: DataFrame, C: DataFrame, look: DataFrame | None = None, small: bool = True,
           read_consumed: bool = True) -> DataFrame:
    """Every row of the three ledgers as (idh, seq, kind, pos): 64-bit hashes instead of names,
    and a position only where one was promised (acknowledged) or observed (audit, consumed).
    Bad rows get a null idh and their kind as seq, so they are counted per ledger, not matched.
    With `look` (the screen's suspicious buckets: `bucket`, `mirror`), only the rows of those
    buckets, filtered before anything but the producer hash is computed (`small`: broadcast it).
    Where the consumed rows of a bucket mirror its audit rows, they are not read: each audit row
    stands in for both (`read_consumed` False: no bucket needs the consumed ledger at all)."""
    status = F.col("status")

    def rows(df, ledger, kind, bad_kind, pos, look=None, stands_in=False):
        bad = bad_row(ledger)
        df = df.withColumn("idh", F.when(~bad, F.xxhash64("producer_id")))
        if look is not None:
            df = df.join(look, bucket_key(F.col("idh"), F.col("seq")) == look["bucket"],
                         "inner" if stands_in else "left_semi")
        if stands_in:  # an audit row of a mirrored bucket is also its consumed row
            df = df.withColumn("k", F.explode(F.when(F.col("mirror"), F.array(F.lit(kind), F.lit(C_ROW)))
                                              .otherwise(F.array(F.lit(kind)))))
            kind = F.col("k")
        # Where a produced row sits in the report's splits, so anomalies need no second look at P.
        where = [F.col("send_ms"), dc_topic(), F.col("partition")] if ledger == "produced" else \
            [F.lit(None).cast("long"), F.lit(None).cast("long"), F.lit(None).cast("int")]
        return df.select("idh", F.when(bad, bad_kind).otherwise(F.col("seq")).alias("seq"),
                         F.when(bad, bad_kind).otherwise(kind).cast("byte").alias("kind"), pos.alias("pos"),
                         *[c.alias(n) for c, n in zip(where, ("send_ms", "dt", "partition"))])

    # The seq is hashed in too: equal hashes then mean "this record at this position", which the
    # screen's XOR certificates need (two records swapping places must not cancel out).
    pos = F.xxhash64("topic", "partition", "offset", "seq")
    p_kind = F.when(status == "ok", P_OK).when(status == "fail", P_FAIL).otherwise(P_INFO)
    p_pos = F.when((status == "ok") & F.col("offset").isNotNull(), pos)
    if look is None:
        return rows(P, "produced", p_kind, P_BAD, p_pos).unionByName(rows(A, "audit", A_ROW, A_BAD, pos)) \
            .unionByName(rows(C, "consumed", C_ROW, C_BAD, pos))
    hint = F.broadcast if small else (lambda df: df)  # noqa: E731
    out = rows(P, "produced", p_kind, P_BAD, p_pos, hint(look.select("bucket"))) \
        .unionByName(rows(A, "audit", A_ROW, A_BAD, pos, hint(look), stands_in=True))
    if not read_consumed:
        return out
    return out.unionByName(rows(C, "consumed", C_ROW, C_BAD, pos, hint(look.filter(~F.col("mirror")).select("bucket"))))


BUCKET_BITS = 6  # the screen groups 64 consecutive seqs of one producer


@dataclass
class Screen:
    suspicious: DataFrame  # bucket keys (xxhash64 of producer hash and seq bucket) to look at, and
                           # whether their consumed rows mirror their audit rows
    totals: dict           # suspicious and unmirrored buckets, bad rows per ledger
    cached: DataFrame      # what `suspicious` reads: unpersisted once the identity pass is done


def bucket_key(idh, seq):
    return F.xxhash64(idh, F.shiftright(seq, BUCKET_BITS))


def screen(rows: DataFrame) -> Screen:
    """Bitmaps per 64 consecutive seqs of a producer: which seqs were produced ok / fail / info,
    written to the log, consumed; how many rows each ledger holds; and XOR certificates over the
    position hashes. A bucket is clean when the ok, audit and consumed sets are equal, nothing is
    doubled and the acknowledged, audit and consumed positions cancel out: every count is then 0
    for its records, so only the other buckets go through the identity pass.
    The row kind is part of the first grouping key, so each row updates three plain aggregates
    (no CASE per kind), and map-side aggregation folds ~64 rows into one before the shuffle; a
    second, small aggregation lines the kinds up per bucket."""
    kind, pos = F.col("kind"), F.col("pos")
    bit = F.expr(f"shiftleft(1L, CAST(pmod(seq, {1 << BUCKET_BITS}) AS INT))")
    # Bad rows carry a null producer hash and their kind as seq: their own groups, per ledger.
    b = F.when(F.col("idh").isNull(), F.col("seq")).otherwise(F.shiftright("seq", BUCKET_BITS))
    # An ok row without an offset promised no position: 1 never cancels a position hash.
    x = F.when(kind == P_OK, F.coalesce(pos, F.lit(1).cast("long"))).otherwise(pos)
    per_kind = rows.groupBy("idh", b.alias("b"), "kind").agg(
        F.bit_or(bit).alias("bits"), F.count(F.lit(1)).alias("n"), F.bit_xor(x).alias("x"))

    def of(k, col):
        return F.coalesce(F.max(F.when(kind == k, F.col(col))), F.lit(0).cast("long"))

    g = per_kind.groupBy("idh", "b").agg(
        *[of(k, "bits").alias(n) for k, n in ((P_OK, "ok"), (P_FAIL, "fail"), (P_INFO, "info"), (A_ROW, "a"),
                                              (C_ROW, "c"))],
        F.sum(F.when(kind <= P_INFO, F.col("n")).otherwise(0)).alias("n_p"), of(A_ROW, "n").alias("n_a"),
        of(C_ROW, "n").alias("n_c"), F.sum("n").alias("rows"),
        *[of(k, "x").alias(n) for k, n in ((P_OK, "x_ok"), (A_ROW, "x_a"), (C_ROW, "x_c"))])
    ok, fail, info, a, c = (F.col(n) for n in ("ok", "fail", "info", "a", "c"))
    produced = ok.bitwiseOR(fail).bitwiseOR(info)
    clean = ((F.col("n_p") == F.bit_count(produced))
             & (F.bit_count(ok) + F.bit_count(fail) + F.bit_count(info) == F.bit_count(produced))
             & (F.col("n_a") == F.bit_count(a)) & (F.col("n_c") == F.bit_count(c)) & (a == ok) & (c == ok)
             & (F.col("x_ok").bitwiseXOR(F.col("x_a")) == 0) & (F.col("x_a").bitwiseXOR(F.col("x_c")) == 0))
    # The consumed rows are the audit rows (same seqs, counts and positions: the audit holds one
    # row per position, so equal counts and cancelling certificates leave no room for a swap).
    # The identity pass then lets each audit row stand in for its consumed twin.
    mirror = (c == a) & (F.col("n_c") == F.col("n_a")) & (F.col("x_a").bitwiseXOR(F.col("x_c")) == 0)
    valid = F.col("idh").isNotNull()
    g = g.select(F.when(valid, F.xxhash64("idh", "b")).alias("bucket"), "b", "rows", (valid & ~clean).alias("look"),
                 mirror.alias("mirror")).filter(~valid | F.col("look")).persist(StorageLevel.MEMORY_AND_DISK)
    row = g.agg(F.sum(F.col("look").cast("int")).alias("suspicious"),
                F.sum((F.col("look") & ~F.col("mirror")).cast("int")).alias("unmirrored"),
                *[F.sum(F.when(F.col("bucket").isNull() & (F.col("b") == k), F.col("rows")).otherwise(0)).alias(name)
                  for k, name in ((P_BAD, "bad_p"), (A_BAD, "bad_a"), (C_BAD, "bad_c"))]).collect()[0]
    return Screen(g.filter("look").select("bucket", "mirror"), {k: int(v or 0) for k, v in row.asDict().items()}, g)


def dc_topic():
    """The producer's DC and the topic as one long key (names come back through `names`)."""
    return F.xxhash64(F.coalesce(F.col("dc"), F.lit("")), F.col("topic"))


@dataclass
class Identities:
    anomalies: DataFrame  # persisted: (idh, seq), flags and the produced row's split keys, only
                          # identities with something to say
    totals: dict          # every identity count, bad-row counts, number of anomalous identities
    by_split: list[dict]  # the flags summed per (phase, dt, partition, send_sec) of the produced
                          # row, with the first and last lost send time; keys are None without one


def identity_pass(P: DataFrame, A: DataFrame, C: DataFrame, scr: Screen, partitions: int, phase) -> Identities:
    """The rows of the suspicious buckets only, one hash aggregation per identity, on a packed
    occurrence count (produced, audit and consumed rows in 16-bit fields of one long) and the
    lowest and highest position seen. The anomalies come back summed per split of their produced
    row (`phase`: a column of send_ms), in the same job as the totals. Totals include the
    screen's (bad rows per ledger)."""
    if not scr.totals["suspicious"]:
        empty = P.sparkSession.createDataFrame(
            [], "idh long, seq long, send_ms long, dt long, partition int, " + ", ".join(f"{c} int" for c in FLAGS))
        scr.cached.unpersist()
        return Identities(empty, {**dict.fromkeys(IDENTITY_TOTALS, 0), **scr.totals}, [])
    rows = narrow(P, A, C, scr.suspicious, small=scr.totals["suspicious"] <= BROADCAST_ROWS,
                  read_consumed=scr.totals["unmirrored"] > 0)
    kind, pos = F.col("kind"), F.col("pos")
    is_p = kind <= P_INFO
    packed = F.when(is_p, 1).when(kind == A_ROW, 1 << FIELD).when(kind == C_ROW, 1 << 2 * FIELD).otherwise(0)
    ident = rows.repartition(partitions, "idh", "seq").groupBy("idh", "seq").agg(
        F.sum(packed.cast("long")).alias("packed"), F.count(F.lit(1)).alias("rows"),
        F.max(F.when(is_p, kind)).alias("p_kind"), F.max(F.when(kind == P_OK, pos)).alias("p_pos"),
        F.min(F.when(kind == A_ROW, pos)).alias("a_lo"), F.max(F.when(kind == A_ROW, pos)).alias("a_hi"),
        F.min(F.when(kind == C_ROW, pos)).alias("c_lo"), F.max(F.when(kind == C_ROW, pos)).alias("c_hi"),
        *[F.max(n).alias(n) for n in ("send_ms", "dt", "partition")])
    field = lambda i: F.shiftright(F.col("packed"), i * FIELD).bitwiseAND((1 << FIELD) - 1)  # noqa: E731
    p_n, a_n, c_n, p_kind, p_pos = field(0), field(1), field(2), F.col("p_kind"), F.col("p_pos")
    a_lo, a_hi, c_lo, c_hi = F.col("a_lo"), F.col("a_hi"), F.col("c_lo"), F.col("c_hi")
    p_ok = (p_n > 0) & (p_kind == P_OK)  # bad rows never get here: the bucket filter drops them
    one = lambda cond: F.when(cond, 1).otherwise(0)  # noqa: E731
    at_audit = (p_pos == a_lo) | (p_pos == a_hi)  # exact unless 3+ audit rows: then checked again
    flags = ident.select(
        "idh", "seq", "send_ms", "dt", "partition",
        one(p_ok & (a_n == 0)).alias("acked_lost"), one(p_ok & (c_n == 0)).alias("acked_unseen"),
        one((p_kind == P_FAIL) & (a_n > 0)).alias("failed_present"),
        one((p_kind == P_INFO) & (a_n > 0)).alias("indeterminate_present"),
        F.greatest(a_n - 1, F.lit(0)).alias("duplicates_in_log"),
        F.greatest(c_n - 1, F.lit(0)).alias("duplicates_delivered"),
        F.when(p_n == 0, a_n).otherwise(0).alias("phantoms"),
        one(p_ok & (a_n > 0) & (a_n < 3) & ~F.coalesce(at_audit, F.lit(False))).alias("ack_offset_mismatch"),
        one(p_ok & (a_n >= 3) & ~F.coalesce(at_audit, F.lit(False))).alias("mismatch_candidates"),
        # Consumed somewhere the audit may not hold this record: resolved exactly afterwards. With at
        # most two rows on each side the positions are known and only real divergence is a candidate.
        one((c_n > 0) & ((a_n == 0) | (a_n > 2) | (c_n > 2) | ~F.coalesce(
            ((c_lo == a_lo) | (c_lo == a_hi)) & ((c_hi == a_lo) | (c_hi == a_hi)), F.lit(False))))
        .alias("divergent_candidates"),
        one(p_n > 1).alias("produced_twice"),
        one((F.col("rows") != p_n + a_n + c_n)).alias("too_many_copies"))
    counted = [c for c in flags.columns if c not in ("idh", "seq", "send_ms", "dt", "partition")]
    anomalies = flags.filter(F.greatest(*[F.col(c) for c in counted]) > 0).persist(StorageLevel.MEMORY_AND_DISK)
    lost = F.col("acked_lost") == 1
    by_split = [r.asDict() for r in anomalies.groupBy(
        phase.alias("phase"), "dt", "partition", F.floor(F.col("send_ms") / 1000).alias("send_sec")).agg(
        *[F.sum(c).alias(c) for c in counted], F.count(F.lit(1)).alias("anomalous"),
        F.min(F.when(lost, F.col("send_ms"))).alias("lost_first_send_ms"),
        F.max(F.when(lost, F.col("send_ms"))).alias("lost_last_send_ms")).collect()]
    scr.cached.unpersist()
    totals = {k: sum(r[k] for r in by_split) for k in counted + ["anomalous"]}
    return Identities(anomalies, {**totals, **scr.totals}, [r for r in by_split if r["send_sec"] is not None])
