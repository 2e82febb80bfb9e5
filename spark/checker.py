"""The counts, as a pure function of the drill record's DataFrames.

Built for records where almost every record is clean:
  1. screen: produced ∪ audit ∪ consumed narrowed to fixed-width columns (producer hash, seq,
     row kind, position hash) and folded into bitmaps per 64 consecutive seqs of a producer,
     with XOR certificates over the positions. Map-side aggregation turns ~64 rows into one
     before the only wide shuffle; a bucket whose sets agree and whose certificates cancel has
     nothing to report. Bad rows are counted here.
  2. identity pass: the rows of the other buckets only (a broadcast filter), one aggregation per
     identity. Anomalous identities leave it with their flags and where their produced row sits
     (phase, DC and topic, partition, second), so no second look at the produced ledger is needed.
  3. single-ledger jobs, run alongside 1 and 2 (spark/verify.py): the producer pass (counts per
     fine split, acknowledgement bitmaps for exact gaps and recovery, latency histogram for exact
     percentiles: GROUPING SETS, one scan, no join) and reordering (the audit sorted per
     partition and producer by offset, on four longs).
  4. divergent positions and offset mismatches of records written 3+ times: only when the
     identity pass found candidates, and only their rows, are read again.
Position checks rely on what the audit guarantees: one audit row per (topic, partition, offset).
Hashes (xxhash64) stand for producer ids and positions; a collision is a 2^-64 event.
spark/rollup.py turns the small tables into the summary. RECORD.md defines every count;
tests/test_checker.py pins them on records with known anomalies.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark import rollup
from spark.record import CORRUPT, REQUIRED, STATUSES

# Row kinds in the identity shuffle: the produced ledger's status travels in the kind.
P_OK, P_FAIL, P_INFO, A_ROW, C_ROW, P_BAD, A_BAD, C_BAD = range(8)
COUNT_NAMES = ("produced", "acked", "failed", "indeterminate", "acked_lost", "acked_unseen", "failed_present",
               "indeterminate_present", "duplicates_in_log", "duplicates_delivered", "phantoms",
               "ack_offset_mismatch", "divergent_offsets", "reordered", "max_ack_gap_ms", "torn_lines")
FLAGS = ("acked_lost", "acked_unseen", "failed_present", "indeterminate_present", "duplicates_in_log",
         "duplicates_delivered")
IDENTITY_TOTALS = FLAGS + ("phantoms", "ack_offset_mismatch", "mismatch_candidates", "divergent_candidates",
                           "produced_twice", "too_many_copies", "anomalous")
BROADCAST_ROWS = 2_000_000  # anomalies up to this many are broadcast to the producer pass
FIELD = 16  # bits per ledger in the packed occurrence count of one identity


def bad_row(kind: str):
    """A row that did not parse or lacks a required column (verify.py names the file and line)."""
    cond = F.col(CORRUPT).isNotNull()
    for col in REQUIRED[kind]:
        cond = cond | F.col(col).isNull()
    if kind == "produced":
        cond = cond | ~F.col("status").isin(*STATUSES)
    return cond


def narrow(P: DataFrame, A: DataFrame, C: DataFrame, look: DataFrame | None = None) -> DataFrame:
    """Every row of the three ledgers as (idh, seq, kind, pos): 64-bit hashes instead of names,
    and a position only where one was promised (acknowledged) or observed (audit, consumed).
    Bad rows get a null idh and their kind as seq, so they are counted per ledger, not matched.
    With `look` (bucket keys from the screen), only the rows of those buckets, filtered before
    anything but the producer hash is computed."""
    status = F.col("status")

    def rows(df, ledger, kind, bad_kind, pos):
        bad = bad_row(ledger)
        df = df.withColumn("idh", F.when(~bad, F.xxhash64("producer_id")))
        if look is not None:
            df = df.join(look, bucket_key(F.col("idh"), F.col("seq")) == look["bucket"], "left_semi")
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
    return rows(P, "produced", p_kind, P_BAD, F.when((status == "ok") & F.col("offset").isNotNull(), pos)) \
        .unionByName(rows(A, "audit", A_ROW, A_BAD, pos)).unionByName(rows(C, "consumed", C_ROW, C_BAD, pos))


BUCKET_BITS = 6  # the screen groups 64 consecutive seqs of one producer


@dataclass
class Screen:
    suspicious: DataFrame  # bucket keys (xxhash64 of producer hash and seq bucket) to look at
    totals: dict           # suspicious buckets, bad rows per ledger
    cached: DataFrame      # what `suspicious` reads: unpersisted once the identity pass is done


def bucket_key(idh, seq):
    return F.xxhash64(idh, F.shiftright(seq, BUCKET_BITS))


def screen(rows: DataFrame, partitions: int) -> Screen:
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
    valid = F.col("idh").isNotNull()
    g = g.select(F.when(valid, F.xxhash64("idh", "b")).alias("bucket"), "b", "rows", (valid & ~clean).alias("look")) \
        .filter(~valid | F.col("look")).persist(StorageLevel.MEMORY_AND_DISK)
    row = g.agg(F.sum(F.col("look").cast("int")).alias("suspicious"),
                *[F.sum(F.when(F.col("bucket").isNull() & (F.col("b") == k), F.col("rows")).otherwise(0)).alias(name)
                  for k, name in ((P_BAD, "bad_p"), (A_BAD, "bad_a"), (C_BAD, "bad_c"))]).collect()[0]
    return Screen(g.filter("look").select("bucket"), {k: int(v or 0) for k, v in row.asDict().items()}, g)


def dc_topic():
    """The producer's DC and the topic as one long key (names come back through `names`)."""
    return F.xxhash64(F.coalesce(F.col("dc"), F.lit("")), F.col("topic"))


@dataclass
class Identities:
    anomalies: DataFrame  # persisted: (idh, seq) + flags, only identities with something to say
    totals: dict          # every identity count, bad-row counts, number of anomalous identities


def identity_pass(P: DataFrame, A: DataFrame, C: DataFrame, scr: Screen, partitions: int) -> Identities:
    """The rows of the suspicious buckets only, one hash aggregation per identity, on a packed
    occurrence count (produced, audit and consumed rows in 16-bit fields of one long) and the
    lowest and highest position seen. Totals include the screen's (bad rows per ledger)."""
    if not scr.totals["suspicious"]:
        empty = P.sparkSession.createDataFrame(
            [], "idh long, seq long, send_ms long, dt long, partition int, " + ", ".join(f"{c} int" for c in FLAGS))
        scr.cached.unpersist()
        return Identities(empty, {**dict.fromkeys(IDENTITY_TOTALS, 0), **scr.totals})
    look = scr.suspicious
    look = F.broadcast(look) if scr.totals["suspicious"] <= BROADCAST_ROWS else look
    rows = narrow(P, A, C, look)
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
    valid, p_ok = F.col("idh").isNotNull(), (p_n > 0) & (p_kind == P_OK)
    one = lambda cond: F.when(valid & cond, 1).otherwise(0)  # noqa: E731
    at_audit = (p_pos == a_lo) | (p_pos == a_hi)  # exact unless 3+ audit rows: then checked again
    flags = ident.select(
        "idh", "seq", "send_ms", "dt", "partition",
        one(p_ok & (a_n == 0)).alias("acked_lost"), one(p_ok & (c_n == 0)).alias("acked_unseen"),
        one((p_kind == P_FAIL) & (a_n > 0)).alias("failed_present"),
        one((p_kind == P_INFO) & (a_n > 0)).alias("indeterminate_present"),
        F.when(valid, F.greatest(a_n - 1, F.lit(0))).otherwise(0).alias("duplicates_in_log"),
        F.when(valid, F.greatest(c_n - 1, F.lit(0))).otherwise(0).alias("duplicates_delivered"),
        F.when(valid & (p_n == 0), a_n).otherwise(0).alias("phantoms"),
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
    row = anomalies.agg(*[F.sum(c).alias(c) for c in counted], F.count(F.lit(1)).alias("anomalous")).collect()[0]
    scr.cached.unpersist()
    return Identities(anomalies, {**{k: int(v or 0) for k, v in row.asDict().items()}, **scr.totals})


FINE, LATENCY = ("phase", "dt", "partition", "send_sec", "ack_word"), ("phase", "send_sec", "latency")


def phase_index(faults: list[dict]):
    """0 before the first fault, 2i+1 during fault i, 2i+2 after it (by send time)."""
    send, expr = F.col("send_ms"), None
    for i, f in enumerate(faults):
        end = f.get("end_ms")
        for cond, idx in ((send < f["start_ms"], 2 * i), (send < end if end is not None else F.lit(True), 2 * i + 1)):
            expr = F.when(cond, idx) if expr is None else expr.when(cond, idx)
    return F.lit(0) if expr is None else expr.otherwise(2 * len(faults))


def phase_labels(faults: list[dict]) -> list[str]:
    if not faults:
        return ["no fault"]
    names = [f"{f.get('fault')} {f.get('target')}" for f in faults]
    return ["before"] + [x for n in names for x in (f"during {n}", f"after {n}")]


def producer_pass(P: DataFrame, faults: list[dict]) -> dict[str, list[dict]]:
    """One scan of the produced ledger, two small tables (GROUPING SETS): counts per (phase, DC
    and topic, partition, second, acknowledgement word) with that word's bitmap, and the latency
    histogram per (phase, second). No join: anomalies come from the identity pass."""
    ok = (F.col("status") == "ok") & F.col("ack_ms").isNotNull()
    d = P.filter(~bad_row("produced")).select(
        phase_index(faults).alias("phase"), dc_topic().alias("dt"), "partition", "status", "ack_ms",
        F.floor(F.col("send_ms") / 1000).alias("send_sec"),
        F.when(ok, F.floor(F.col("ack_ms") / rollup.WORD_MS)).alias("ack_word"),
        F.when(ok, F.col("ack_ms") - F.col("send_ms")).alias("latency"))
    status = F.col("status")

    def n(cond):
        return F.sum(F.when(cond, 1).otherwise(0))

    rows = d.groupingSets([list(FINE), list(LATENCY)], *dict.fromkeys(FINE + LATENCY)).agg(
        F.grouping_id().alias("gid"), F.count(F.lit(1)).alias("produced"), n(status == "ok").alias("acked"),
        n(status == "fail").alias("failed"), n(status == "info").alias("indeterminate"),
        F.bit_or(F.when(ok, F.expr(f"shiftleft(1L, CAST(ack_ms % {rollup.WORD_MS} AS INT))"))).alias("mask")).collect()
    fine_gid = _gid(FINE)
    tables: dict[str, list[dict]] = {"fine": [], "latency": []}
    for r in rows:
        r = r.asDict()
        if r["gid"] == fine_gid:
            tables["fine"].append(r)
        elif r["latency"] is not None:  # rows without an acknowledgement have no latency
            tables["latency"].append(r)
    return tables


def anomalies_by_split(ident: Identities, faults: list[dict]) -> list[dict]:
    """The anomalous records with a produced row, summed at the fine grain of the producer pass."""
    if not ident.totals["anomalous"]:
        return []
    lost = F.col("acked_lost") == 1
    return [r.asDict() for r in ident.anomalies.filter(F.col("send_ms").isNotNull())
            .groupBy(phase_index(faults).alias("phase"), "dt", "partition",
                     F.floor(F.col("send_ms") / 1000).alias("send_sec"))
            .agg(*[F.sum(c).alias(c) for c in FLAGS],
                 F.min(F.when(lost, F.col("send_ms"))).alias("lost_first_send_ms"),
                 F.max(F.when(lost, F.col("send_ms"))).alias("lost_last_send_ms")).collect()]


def names(P: DataFrame) -> dict[int, tuple]:
    """dc_topic() hash -> (dc, topic), hashed by Spark after the (few) distinct pairs are found."""
    return {r["dt"]: (r["dc"] or None, r["topic"]) for r in P.filter(~bad_row("produced"))
            .select(F.coalesce(F.col("dc"), F.lit("")).alias("dc"), "topic").distinct()
            .select(dc_topic().alias("dt"), "dc", "topic").collect()}


def _gid(keys: tuple[str, ...]) -> int:
    """grouping_id() of a grouping set: a bit per grouping column, set where it is aggregated away."""
    cols = list(dict.fromkeys(FINE + LATENCY))
    return sum(1 << (len(cols) - 1 - i) for i, c in enumerate(cols) if c not in keys)


def reordering(A: DataFrame) -> dict[int, int]:
    """Per partition (as partition_key()): audit rows whose seq is below their producer's largest
    seq at a lower offset. The one sort the checker does on a whole ledger, on four longs."""
    a = A.filter(~bad_row("audit")).select(F.xxhash64("topic", "partition", "producer_id").alias("g"),
                                           partition_key().alias("tp"), "offset", "seq")
    w = Window.partitionBy("g").orderBy("offset").rowsBetween(Window.unboundedPreceding, -1)
    return {r["tp"]: r["reordered"] for r in a.select("tp", "seq", F.max("seq").over(w).alias("prev_max"))
            .groupBy("tp").agg(F.sum(F.when(F.col("seq") < F.col("prev_max"), 1).otherwise(0)).alias("reordered"))
            .collect()}


def partition_key():
    return F.xxhash64("topic", "partition")


def partition_names(spark, pairs: set[tuple]) -> dict[int, tuple]:
    """partition_key() -> (topic, partition) for the few pairs the report knows."""
    if not pairs:
        return {}
    df = spark.createDataFrame(sorted(pairs), "topic string, partition int")
    return {r["k"]: (r["topic"], r["partition"]) for r in df.select(partition_key().alias("k"), "*").collect()}


def _rows_of(df: DataFrame, ledger: str, cand: DataFrame, cols: list[str]) -> DataFrame:
    return df.filter(~bad_row(ledger)).withColumn("idh", F.xxhash64("producer_id")).join(cand, ["idh", "seq"]) \
        .select(*cols)


def _candidates(ident: Identities, flag: str) -> DataFrame:
    return F.broadcast(ident.anomalies.filter(F.col(flag) > 0).select("idh", "seq"))


def divergent_positions(A: DataFrame, C: DataFrame, ident: Identities) -> list[dict]:
    """Distinct consumed positions where the audit holds no row of the record consumed there:
    only the candidates' rows are read again (normally none)."""
    if not ident.totals["divergent_candidates"]:
        return []
    cand, cols = _candidates(ident, "divergent_candidates"), ["idh", "seq", "topic", "partition", "offset"]
    seen = _rows_of(C, "consumed", cand, cols).join(_rows_of(A, "audit", cand, cols), cols, "left_anti")
    return [r.asDict() for r in seen.groupBy("topic", "partition")
            .agg(F.countDistinct("offset").alias("divergent_offsets")).collect()]


def more_offset_mismatches(P: DataFrame, A: DataFrame, ident: Identities) -> int:
    """Acknowledged records written to the log three times or more: is one copy at the
    acknowledged offset? Only those records are read again."""
    if not ident.totals["mismatch_candidates"]:
        return 0
    cand, cols = _candidates(ident, "mismatch_candidates"), ["idh", "seq", "topic", "partition", "offset"]
    acked = _rows_of(P.filter(F.col("status") == "ok"), "produced", cand, cols)
    return acked.join(_rows_of(A, "audit", cand, cols), cols, "left_anti").count()


@dataclass
class Ledgerwise:
    """What the checker computes from one ledger alone, independent of the identity passes
    (verify.py runs these Spark jobs alongside them)."""
    tables: dict[str, list[dict]]  # producer_pass()
    dc_topics: dict[int, tuple]    # names()
    reordered: dict[int, int]      # reordering()


def ledgerwise(P: DataFrame, A: DataFrame, faults: list[dict]) -> Ledgerwise:
    return Ledgerwise(producer_pass(P, faults), names(P), reordering(A))


def run(P: DataFrame, A: DataFrame, C: DataFrame, ident: Identities, faults: list[dict], lw: Ledgerwise,
        torn_lines: int = 0) -> dict:
    """The summary's data sections (see spark/verify.py for the rest)."""
    t = ident.totals
    tables = lw.tables
    labels = phase_labels(faults)
    # Acknowledgement words are only for the timelines: fold them away once, then roll up.
    fine = rollup.roll(tables["fine"], FINE[:-1]) + anomalies_by_split(ident, faults)
    for r in fine:
        r["dc"], r["topic"] = lw.dc_topics[r["dt"]]
    for r in fine + tables["latency"]:
        r["phase"] = labels[r["phase"]]
    part_rows: dict[tuple, dict] = {}
    tp_names = partition_names(P.sparkSession, {(r["topic"], r["partition"]) for r in fine})
    for k, n in lw.reordered.items():
        if n:
            part_rows.setdefault(tp_names.get(k, ("?", k)), {})["reordered"] = n
    for r in divergent_positions(A, C, ident):
        part_rows.setdefault((r["topic"], r["partition"]), {})["divergent_offsets"] = r["divergent_offsets"]
    mismatches = t["ack_offset_mismatch"] + more_offset_mismatches(P, A, ident)
    ident.anomalies.unpersist()

    words: dict[tuple, dict[int, int]] = {}
    for r in tables["fine"]:
        if r["ack_word"] is not None:
            w = words.setdefault(lw.dc_topics[r["dt"]][1:] + (r["partition"],), {})
            w[r["ack_word"]] = w.get(r["ack_word"], 0) | (r["mask"] or 0)
    timelines = {k: rollup.AckTimeline(list(v.items())) for k, v in words.items()}
    for k, tl in timelines.items():
        part_rows.setdefault(k, {})["max_ack_gap_ms"] = tl.max_gap()

    total = (rollup.roll(fine, ()) or [{}])[0]
    counts = {k: int(total.get(k) or 0) for k in rollup.ADDITIVE}
    # Identity totals include what has no produced row to be split by (phantoms' duplicates).
    counts |= {k: t[k] for k in ("duplicates_in_log", "duplicates_delivered", "phantoms")}
    counts["ack_offset_mismatch"] = mismatches
    counts["divergent_offsets"] = sum(int(r.get("divergent_offsets") or 0) for r in part_rows.values())
    counts["reordered"] = sum(int(r.get("reordered") or 0) for r in part_rows.values())
    counts["max_ack_gap_ms"] = max((int(r.get("max_ack_gap_ms") or 0) for r in part_rows.values()), default=0)
    counts["torn_lines"] = torn_lines
    counts = {k: counts.get(k, 0) for k in COUNT_NAMES}

    by_partition_keys = {(r["topic"], r["partition"]) for r in fine}
    fault_stats = rollup.recovery(timelines, len(by_partition_keys), faults)
    for f, stats in zip(faults, fault_stats):
        stats.update(fault=f.get("fault"), target=f.get("target"), start_ms=f["start_ms"], end_ms=f.get("end_ms"))

    hist: dict[tuple, dict[int, int]] = {}
    for r in tables["latency"]:
        for key in (("phase", r["phase"]), ("send_sec", r["send_sec"])):
            h = hist.setdefault(key, {})
            h[r["latency"]] = h.get(r["latency"], 0) + r["produced"]

    def with_latency(rows, key):
        for g in rows:
            g["latency_p50_ms"], g["latency_p99_ms"] = rollup.percentiles(hist.get((key, g[key]), {}))
        return rows

    order = {label: i for i, label in enumerate(labels)}
    return {
        "counts": counts,
        "phases": sorted(_table(with_latency(rollup.roll(fine, ("phase",)), "phase"), ("phase",)),
                         key=lambda r: order[r["phase"]]),
        "by_dc": sorted(_table(rollup.roll(fine, ("dc",)), ("dc",)), key=lambda r: str(r["dc"])),
        "by_partition": [{**_table([r], ("topic", "partition"))[0],
                          **{k: int(part_rows.get((r["topic"], r["partition"]), {}).get(k) or 0)
                             for k in ("max_ack_gap_ms", "reordered", "divergent_offsets")}}
                         for r in sorted(rollup.roll(fine, ("topic", "partition")),
                                         key=lambda r: (str(r["topic"]), r["partition"]))],
        "faults": fault_stats,
        "data_loss_window": _loss_window(total, faults),
        "timeline": {
            "send": sorted(({"sec": r["send_sec"], **{k: r[k] for k in ("acked", "failed", "indeterminate",
                                                                         "acked_lost", "duplicates_in_log")},
                             "latency_p50_ms": r["latency_p50_ms"], "latency_p99_ms": r["latency_p99_ms"]}
                            for r in with_latency(rollup.roll(fine, ("send_sec",)), "send_sec")),
                           key=lambda r: r["sec"]),
            "acks": _acks_per_second(tables["fine"]),
        },
    }


def _table(rows, keys):
    keep = rollup.ADDITIVE + ("latency_p50_ms", "latency_p99_ms")
    return [{**{k: r[k] for k in keys}, **{k: r.get(k) for k in keep}} for r in rows]


def _acks_per_second(fine: list[dict]) -> list[dict]:
    per_sec: dict[int, int] = {}
    for r in fine:
        if r["ack_word"] is None:
            continue
        sec = r["ack_word"] * rollup.WORD_MS // 1000
        per_sec[sec] = per_sec.get(sec, 0) + r["acked"]
    return [{"sec": s, "acked": n} for s, n in sorted(per_sec.items())]


def _loss_window(total: dict, faults: list[dict]) -> dict | None:
    first, last = total.get("lost_first_send_ms"), total.get("lost_last_send_ms")
    if first is None:
        return None
    anchor = faults[0]["start_ms"] if faults else None
    return {"first_lost_send_ms": first, "last_lost_send_ms": last, "span_ms": last - first,
            "first_relative_to_fault_ms": first - anchor if anchor else None,
            "last_relative_to_fault_ms": last - anchor if anchor else None}
