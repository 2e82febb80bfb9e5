"""The counts, as a pure function of the drill record's DataFrames.

Built around one wide shuffle, because on a drill record almost every record is clean:
  1. identity pass: produced ∪ audit ∪ consumed narrowed to four fixed-width columns (producer
     hash, seq, row kind, position hash), hash-partitioned once by identity and aggregated once
     per identity. Only the anomalous identities leave it, with their flags, and the totals of
     every identity count.
  2. producer pass: the produced ledger joined with those few anomalies and aggregated into three
     small tables in one scan (GROUPING SETS): counts at the finest grain every split adds up
     from, acknowledgement bitmaps (exact ack gaps and recovery without sorting the acks) and a
     latency histogram (exact percentiles). spark/rollup.py turns them into the summary.
  3. reordering: the audit alone, sorted per (partition, producer) by offset.
  4. divergent positions and offset mismatches of records written 3+ times: only when the
     identity pass found candidates, and only their rows, are read again.
Position checks rely on what the audit guarantees: one audit row per (topic, partition, offset).
RECORD.md defines every count; tests/test_checker.py pins them on records with known anomalies.
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


def narrow(P: DataFrame, A: DataFrame, C: DataFrame) -> DataFrame:
    """Every row of the three ledgers as (idh, seq, kind, pos): 64-bit hashes instead of names,
    and a position only where one was promised (acknowledged) or observed (audit, consumed).
    Bad rows get a null idh and their kind as seq, so they are counted per ledger, not matched."""
    status = F.col("status")

    def rows(df, ledger, kind, bad_kind, pos):
        bad = bad_row(ledger)
        return df.select(F.when(~bad, F.xxhash64("producer_id")).alias("idh"),
                         F.when(bad, bad_kind).otherwise(F.col("seq")).alias("seq"),
                         F.when(bad, bad_kind).otherwise(kind).cast("byte").alias("kind"), pos.alias("pos"))

    pos = F.xxhash64("topic", "partition", "offset")
    p_kind = F.when(status == "ok", P_OK).when(status == "fail", P_FAIL).otherwise(P_INFO)
    return rows(P, "produced", p_kind, P_BAD, F.when((status == "ok") & F.col("offset").isNotNull(), pos)) \
        .unionByName(rows(A, "audit", A_ROW, A_BAD, pos)).unionByName(rows(C, "consumed", C_ROW, C_BAD, pos))


@dataclass
class Identities:
    anomalies: DataFrame  # persisted: (idh, seq) + flags, only identities with something to say
    totals: dict          # every identity count, bad-row counts, number of anomalous identities


def identity_pass(rows: DataFrame, partitions: int) -> Identities:
    """One hash aggregation per identity, on a packed occurrence count (produced, audit and
    consumed rows in 16-bit fields of one long) and the lowest and highest position seen."""
    kind, pos = F.col("kind"), F.col("pos")
    is_p = kind <= P_INFO
    packed = F.when(is_p, 1).when(kind == A_ROW, 1 << FIELD).when(kind == C_ROW, 1 << 2 * FIELD).otherwise(0)
    ident = rows.repartition(partitions, "idh", "seq").groupBy("idh", "seq").agg(
        F.sum(packed.cast("long")).alias("packed"), F.count(F.lit(1)).alias("rows"),
        F.max(F.when(is_p, kind)).alias("p_kind"), F.max(F.when(kind == P_OK, pos)).alias("p_pos"),
        F.min(F.when(kind == A_ROW, pos)).alias("a_lo"), F.max(F.when(kind == A_ROW, pos)).alias("a_hi"),
        F.min(F.when(kind == C_ROW, pos)).alias("c_lo"), F.max(F.when(kind == C_ROW, pos)).alias("c_hi"))
    field = lambda i: F.shiftright(F.col("packed"), i * FIELD).bitwiseAND((1 << FIELD) - 1)  # noqa: E731
    p_n, a_n, c_n, p_kind, p_pos = field(0), field(1), field(2), F.col("p_kind"), F.col("p_pos")
    a_lo, a_hi, c_lo, c_hi = F.col("a_lo"), F.col("a_hi"), F.col("c_lo"), F.col("c_hi")
    valid, p_ok = F.col("idh").isNotNull(), (p_n > 0) & (p_kind == P_OK)
    one = lambda cond: F.when(valid & cond, 1).otherwise(0)  # noqa: E731
    at_audit = (p_pos == a_lo) | (p_pos == a_hi)  # exact unless 3+ audit rows: then checked again
    flags = ident.select(
        "idh", "seq",
        one(p_ok & (a_n == 0)).alias("acked_lost"), one(p_ok & (c_n == 0)).alias("acked_unseen"),
        one((p_kind == P_FAIL) & (a_n > 0)).alias("failed_present"),
        one((p_kind == P_INFO) & (a_n > 0)).alias("indeterminate_present"),
        F.when(valid, F.greatest(a_n - 1, F.lit(0))).otherwise(0).alias("duplicates_in_log"),
        F.when(valid, F.greatest(c_n - 1, F.lit(0))).otherwise(0).alias("duplicates_delivered"),
        F.when(valid & (p_n == 0), a_n).otherwise(0).alias("phantoms"),
        one(p_ok & (a_n > 0) & (a_n < 3) & ~F.coalesce(at_audit, F.lit(False))).alias("ack_offset_mismatch"),
        one(p_ok & (a_n >= 3) & ~F.coalesce(at_audit, F.lit(False))).alias("mismatch_candidates"),
        # consumed somewhere the audit may not hold this record: resolved exactly afterwards
        one((c_n > 0) & ((a_n == 0) | (a_lo != a_hi) | (c_lo != a_lo) | (c_hi != a_lo))).alias("divergent_candidates"),
        one(p_n > 1).alias("produced_twice"),
        one((F.col("rows") != p_n + a_n + c_n)).alias("too_many_copies"),
        *[F.when(~valid & (F.col("seq") == k), F.col("rows")).otherwise(0).alias(name)
          for k, name in ((P_BAD, "bad_p"), (A_BAD, "bad_a"), (C_BAD, "bad_c"))])
    counted = [c for c in flags.columns if c not in ("idh", "seq")]
    anomalies = flags.filter(F.greatest(*[F.col(c) for c in counted]) > 0).persist(StorageLevel.MEMORY_AND_DISK)
    row = anomalies.agg(*[F.sum(c).alias(c) for c in counted], F.count(F.lit(1)).alias("anomalous")).collect()[0]
    return Identities(anomalies, {k: int(v or 0) for k, v in row.asDict().items()})


def phase_expr(faults: list[dict]):
    """before / during <fault> / after <fault> by send time; several faults chain in time order."""
    if not faults:
        return F.lit("no fault")
    send = F.col("send_ms")
    expr = None
    for i, f in enumerate(faults):
        name = f"{f.get('fault')} {f.get('target')}"
        start, end = f["start_ms"], f.get("end_ms")
        during = (send >= start) & (send < end) if end is not None else (send >= start)
        before = "before" if i == 0 else f"after {faults[i - 1].get('fault')} {faults[i - 1].get('target')}"
        for cond, label in ((send < start, before), (during, f"during {name}")):
            expr = F.when(cond, label) if expr is None else expr.when(cond, label)
    last = faults[-1]
    return expr.otherwise(f"after {last.get('fault')} {last.get('target')}")


FINE, ACK_WORDS, LATENCY = ("phase", "dc", "topic", "partition", "send_sec"), ("topic", "partition", "ack_word"), \
    ("phase", "send_sec", "latency")


def producer_pass(P: DataFrame, ident: Identities, faults: list[dict]) -> dict[str, list[dict]]:
    """One scan of the produced ledger, three small tables (GROUPING SETS)."""
    p = P.filter(~bad_row("produced")).select("producer_id", "seq", "topic", "partition", "dc", "status",
                                              "send_ms", "ack_ms")
    if ident.totals["anomalous"]:
        an = ident.anomalies.select("idh", "seq", *FLAGS)
        an = F.broadcast(an) if ident.totals["anomalous"] <= BROADCAST_ROWS else an
        p = p.withColumn("idh", F.xxhash64("producer_id")).join(an, ["idh", "seq"], "left")
    else:
        p = p.select("*", *[F.lit(None).cast("int").alias(c) for c in FLAGS])
    ok = (F.col("status") == "ok") & F.col("ack_ms").isNotNull()
    d = p.select(phase_expr(faults).alias("phase"), "dc", "topic", "partition", "status", "send_ms", "ack_ms",
                 F.floor(F.col("send_ms") / 1000).alias("send_sec"),
                 F.when(ok, F.floor(F.col("ack_ms") / rollup.WORD_MS)).alias("ack_word"),
                 F.when(ok, F.col("ack_ms") - F.col("send_ms")).alias("latency"), *FLAGS)
    status, lost = F.col("status"), F.col("acked_lost") == 1

    def n(cond):
        return F.sum(F.when(cond, 1).otherwise(0))

    rows = d.groupingSets([list(FINE), list(ACK_WORDS), list(LATENCY)], *dict.fromkeys(FINE + ACK_WORDS + LATENCY)) \
        .agg(F.grouping_id().alias("gid"), F.count(F.lit(1)).alias("produced"), n(status == "ok").alias("acked"),
             n(status == "fail").alias("failed"), n(status == "info").alias("indeterminate"),
             *[F.sum(F.coalesce(F.col(c), F.lit(0))).alias(c) for c in FLAGS],
             F.min(F.when(lost, F.col("send_ms"))).alias("lost_first_send_ms"),
             F.max(F.when(lost, F.col("send_ms"))).alias("lost_last_send_ms"),
             F.bit_or(F.when(ok, F.expr(f"shiftleft(1L, CAST(ack_ms % {rollup.WORD_MS} AS INT))")))
             .alias("mask")).collect()
    names = {_gid(FINE): "fine", _gid(ACK_WORDS): "acks", _gid(LATENCY): "latency"}
    tables: dict[str, list[dict]] = {"fine": [], "acks": [], "latency": []}
    for r in rows:
        r = r.asDict()
        name = names[r["gid"]]
        if (name == "acks" and r["ack_word"] is None) or (name == "latency" and r["latency"] is None):
            continue  # rows without an acknowledgement
        tables[name].append(r)
    return tables


def _gid(keys: tuple[str, ...]) -> int:
    """grouping_id() of a grouping set: a bit per grouping column, set where it is aggregated away."""
    cols = list(dict.fromkeys(FINE + ACK_WORDS + LATENCY))
    return sum(1 << (len(cols) - 1 - i) for i, c in enumerate(cols) if c not in keys)


def reordering(A: DataFrame) -> list[dict]:
    """Per (topic, partition): audit rows whose seq is below their producer's largest seq at a
    lower offset. The one sort the checker does on a whole ledger, on compact columns."""
    a = A.filter(~bad_row("audit")).select(F.xxhash64("topic", "partition", "producer_id").alias("g"),
                                           "topic", "partition", "offset", "seq")
    w = Window.partitionBy("g").orderBy("offset").rowsBetween(Window.unboundedPreceding, -1)
    return [r.asDict() for r in a.select("topic", "partition", "seq", F.max("seq").over(w).alias("prev_max"))
            .groupBy("topic", "partition").agg(F.sum(F.when(F.col("seq") < F.col("prev_max"), 1).otherwise(0))
                                               .alias("reordered")).collect()]


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


def run(P: DataFrame, A: DataFrame, C: DataFrame, ident: Identities, faults: list[dict],
        torn_lines: int = 0, progress=lambda step: None) -> dict:
    """The summary's data sections (see spark/verify.py for the rest)."""
    t = ident.totals
    tables = producer_pass(P, ident, faults)
    progress("producer pass")
    part_rows: dict[tuple, dict] = {}
    for r in reordering(A):
        part_rows.setdefault((r["topic"], r["partition"]), {})["reordered"] = r["reordered"]
    progress("reordering")
    for r in divergent_positions(A, C, ident):
        part_rows.setdefault((r["topic"], r["partition"]), {})["divergent_offsets"] = r["divergent_offsets"]
    mismatches = t["ack_offset_mismatch"] + more_offset_mismatches(P, A, ident)
    ident.anomalies.unpersist()

    words: dict[tuple, list] = {}
    for r in tables["acks"]:
        words.setdefault((r["topic"], r["partition"]), []).append((r["ack_word"], r["mask"]))
    timelines = {k: rollup.AckTimeline(v) for k, v in words.items()}
    for k, tl in timelines.items():
        part_rows.setdefault(k, {})["max_ack_gap_ms"] = tl.max_gap()

    fine = tables["fine"]
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

    return {
        "counts": counts,
        "phases": sorted(_table(with_latency(rollup.roll(fine, ("phase",)), "phase"), ("phase",)),
                         key=_phase_order(faults)),
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
            "acks": _acks_per_second(tables["acks"]),
        },
    }


def _table(rows, keys):
    keep = rollup.ADDITIVE + ("latency_p50_ms", "latency_p99_ms")
    return [{**{k: r[k] for k in keys}, **{k: r.get(k) for k in keep}} for r in rows]


def _acks_per_second(words: list[dict]) -> list[dict]:
    per_sec: dict[int, int] = {}
    for r in words:
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


def _phase_order(faults):
    order = {"no fault": 0, "before": 0}
    for i, f in enumerate(faults):
        order[f"during {f.get('fault')} {f.get('target')}"] = 2 * i + 1
        order[f"after {f.get('fault')} {f.get('target')}"] = 2 * i + 2
    return lambda r: order.get(r["phase"], 99)
