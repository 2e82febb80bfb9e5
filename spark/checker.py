"""The counts, as a pure function of the drill record's DataFrames.

Two shuffles do all the row-level work, on compact keys (64-bit hashes, no strings, no Python
UDFs):
  * identity pass: produced ∪ audit ∪ consumed grouped by (xxhash64(producer_id), seq);
    everything per record (lost, unseen, present, duplicates, phantoms) and, through grouping
    sets over that one result, the splits by phase, DC, partition and second;
  * position pass: acked-produced ∪ audit ∪ consumed hash-partitioned by (topic, partition) and
    sorted inside each partition: offset mismatches, divergent offsets, reordering and ack gaps
    are window functions over that one exchange.
RECORD.md defines every count; tests/test_checker.py pins them on records with known anomalies.
"""
from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from spark.record import clean

OK, FAIL, INFO = 1, 2, 3
COUNT_NAMES = ("produced", "acked", "failed", "indeterminate", "acked_lost", "acked_unseen", "failed_present",
               "indeterminate_present", "duplicates_in_log", "duplicates_delivered", "phantoms",
               "ack_offset_mismatch", "divergent_offsets", "reordered", "max_ack_gap_ms", "torn_lines")


def compact(P: DataFrame, A: DataFrame, C: DataFrame):
    """Only compact columns: 64-bit hashes instead of producer and topic names in the shuffles.
    The caller (spark/verify.py) has parsed and cached the ledgers once."""
    idh, th = F.xxhash64("producer_id"), F.xxhash64("topic")
    st = (F.when(F.col("status") == "ok", OK).when(F.col("status") == "fail", FAIL)
          .when(F.col("status") == "info", INFO).otherwise(0))
    p = clean(P).select(idh.alias("idh"), "seq", th.alias("th"), "topic", "partition", "offset", "send_ms",
                        "ack_ms", st.cast("byte").alias("st"), "dc")
    a = clean(A).select(idh.alias("idh"), "seq", th.alias("th"), "topic", "partition", "offset")
    c = clean(C).select(idh.alias("idh"), "seq", th.alias("th"), "topic", "partition", "offset")
    return p, a, c


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
        branch = [(send < start, "before" if i == 0 else f"after {faults[i - 1].get('fault')} "
                                                       f"{faults[i - 1].get('target')}"), (during, f"during {name}")]
        for cond, label in branch:
            expr = F.when(cond, label) if expr is None else expr.when(cond, label)
    last = faults[-1]
    return expr.otherwise(f"after {last.get('fault')} {last.get('target')}")


def identity_pass(p: DataFrame, a: DataFrame, c: DataFrame) -> DataFrame:
    u = (p.select("idh", "seq", F.lit(0).cast("byte").alias("src"), "st", "send_ms", "ack_ms", "dc", "topic",
                  "partition")
         .unionByName(a.select("idh", "seq", F.lit(1).cast("byte").alias("src")), allowMissingColumns=True)
         .unionByName(c.select("idh", "seq", F.lit(2).cast("byte").alias("src")), allowMissingColumns=True))
    src = F.col("src")
    return u.groupBy("idh", "seq").agg(
        F.sum(F.when(src == 0, 1).otherwise(0)).alias("p_n"),
        F.sum(F.when(src == 1, 1).otherwise(0)).alias("a_n"),
        F.sum(F.when(src == 2, 1).otherwise(0)).alias("c_n"),
        F.max("st").alias("st"), F.max("send_ms").alias("send_ms"), F.max("ack_ms").alias("ack_ms"),
        F.max("dc").alias("dc"), F.max("topic").alias("topic"), F.max("partition").alias("partition"),
    )


def breakdowns(ident: DataFrame, faults: list[dict]) -> dict[str, list[dict]]:
    """All counts per phase, DC, partition, send second and ack second, plus the global row: one
    aggregation with grouping sets over the identity pass."""
    st, a_n, c_n, p_n = F.col("st"), F.col("a_n"), F.col("c_n"), F.col("p_n")
    lost = (st == OK) & (a_n == 0)
    d = ident.select(
        "*", phase_expr(faults).alias("phase"),
        F.floor(F.col("send_ms") / 1000).alias("send_sec"),
        F.when(st == OK, F.floor(F.col("ack_ms") / 1000)).alias("ack_sec"),
        lost.alias("lost"), (F.col("ack_ms") - F.col("send_ms")).alias("latency"),
    )
    d.createOrReplaceTempView("dcdrill_identities")

    def s(cond: str) -> str:
        return f"SUM(CASE WHEN {cond} THEN 1 ELSE 0 END)"

    sql = f"""
    SELECT grouping_id(phase, dc, topic, partition, send_sec, ack_sec) AS gid, phase, dc, topic, partition,
           send_sec, ack_sec,
           SUM(p_n) AS produced, SUM(CASE WHEN st = {OK} THEN p_n ELSE 0 END) AS acked,
           SUM(CASE WHEN st = {FAIL} THEN p_n ELSE 0 END) AS failed,
           SUM(CASE WHEN st = {INFO} THEN p_n ELSE 0 END) AS indeterminate,
           {s('lost')} AS acked_lost, {s(f'st = {OK} AND c_n = 0')} AS acked_unseen,
           {s(f'st = {FAIL} AND a_n > 0')} AS failed_present, {s(f'st = {INFO} AND a_n > 0')} AS indeterminate_present,
           SUM(GREATEST(a_n - 1, 0)) AS duplicates_in_log, SUM(GREATEST(c_n - 1, 0)) AS duplicates_delivered,
           SUM(CASE WHEN p_n = 0 THEN a_n ELSE 0 END) AS phantoms,
           MIN(CASE WHEN lost THEN send_ms END) AS lost_first_send_ms,
           MAX(CASE WHEN lost THEN send_ms END) AS lost_last_send_ms,
           percentile_approx(CASE WHEN st = {OK} THEN latency END, 0.5, 1000) AS latency_p50_ms,
           percentile_approx(CASE WHEN st = {OK} THEN latency END, 0.99, 1000) AS latency_p99_ms
    FROM dcdrill_identities
    GROUP BY GROUPING SETS ((), (phase), (dc), (topic, partition), (send_sec), (ack_sec))
    """
    rows = [r.asDict() for r in ident.sparkSession.sql(sql).collect()]
    # grouping_id bit i (from the right, last column = bit 0) is 1 when that column is aggregated away.
    full = 0b111111
    sets = {"total": full, "phase": full & ~0b100000, "dc": full & ~0b010000,
            "partition": full & ~0b001100, "send_sec": full & ~0b000010, "ack_sec": full & ~0b000001}
    out: dict[str, list[dict]] = {name: [] for name in sets}
    for r in rows:
        for name, gid in sets.items():
            if r["gid"] == gid:
                out[name].append(r)
    return out


def position_pass(p: DataFrame, a: DataFrame, c: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Per (topic, partition): max ack gap, reordered rows, divergent offsets; and the acked rows
    whose audit position disagrees (joined with the identity pass by the caller)."""
    v = (p.filter(F.col("st") == OK).select("th", "topic", "partition", "offset", "idh", "seq", "ack_ms",
                                            F.lit(0).cast("byte").alias("src"))
         .unionByName(a.select("th", "topic", "partition", "offset", "idh", "seq", F.lit(1).cast("byte").alias("src")),
                      allowMissingColumns=True)
         .unionByName(c.select("th", "topic", "partition", "offset", "idh", "seq", F.lit(2).cast("byte").alias("src")),
                      allowMissingColumns=True)
         .repartition("th", "partition"))  # the one exchange; every window below reuses it
    src, is_a = F.col("src"), F.col("src") == 1
    w_pos = Window.partitionBy("th", "partition", "offset")
    w_pos_ordered = w_pos.orderBy("src", "idh", "seq")
    w_prod = Window.partitionBy("th", "partition", "src", "idh").orderBy("offset") \
        .rowsBetween(Window.unboundedPreceding, -1)
    w_ack = Window.partitionBy("th", "partition", "src").orderBy("ack_ms")
    v = v.select(
        "*",
        F.sum(F.when(is_a, 1).otherwise(0)).over(w_pos).alias("a_cnt"),
        F.max(F.when(is_a, F.col("idh"))).over(w_pos).alias("a_idh"),
        F.max(F.when(is_a, F.col("seq"))).over(w_pos).alias("a_seq"),
        F.row_number().over(w_pos_ordered).alias("rn"),
        F.max("seq").over(w_prod).alias("prev_max_seq"),
        (F.col("ack_ms") - F.lag("ack_ms").over(w_ack)).alias("gap"),
    )
    differs = (F.col("a_cnt") == 0) | (F.col("a_idh") != F.col("idh")) | (F.col("a_seq") != F.col("seq")) \
        | F.col("a_idh").isNull() | F.col("idh").isNull() | F.col("seq").isNull()
    v = v.select("*", F.max(F.when((src == 2) & differs, 1).otherwise(0)).over(w_pos).alias("c_div"))
    per_partition = v.groupBy("topic", "partition").agg(
        F.max(F.when(src == 0, F.col("gap"))).alias("max_ack_gap_ms"),
        F.sum(F.when(is_a & (F.col("seq") < F.col("prev_max_seq")), 1).otherwise(0)).alias("reordered"),
        F.sum(F.when((F.col("rn") == 1) & (F.col("c_div") == 1), 1).otherwise(0)).alias("divergent_offsets"),
    )
    mismatched = v.filter((src == 0) & differs).select("idh", "seq")
    return per_partition, mismatched


def recovery(p: DataFrame, faults: list[dict]) -> list[dict]:
    """Per fault, the measured recovery time: for each partition, the longest gap between
    consecutive acks that overlaps the fault window ends with the partition's first ack "again";
    recovery = the slowest partition's first ack again minus the fault start. None when a
    partition never acknowledged anything after the fault start."""
    w = Window.partitionBy("topic", "partition").orderBy("ack_ms")
    acks = p.filter(F.col("st") == OK).select("topic", "partition", "ack_ms",
                                              F.lag("ack_ms").over(w).alias("prev_ack_ms"))
    partitions = p.select("topic", "partition").distinct().count()
    out = []
    for f in faults:
        start, end = f["start_ms"], f.get("end_ms") or 2**62
        gaps = acks.filter((F.col("ack_ms") >= start) & (F.col("prev_ack_ms") <= end)) \
            .groupBy("topic", "partition") \
            .agg(F.max_by("ack_ms", F.col("ack_ms") - F.col("prev_ack_ms")).alias("back_ms")).collect()
        back = max((r["back_ms"] for r in gaps), default=None)
        out.append({"recovery_ms": (back - start) if back is not None and len(gaps) == partitions else None,
                    "partitions_acking_after_start": len(gaps), "partitions": partitions})
    return out


def run(P: DataFrame, A: DataFrame, C: DataFrame, faults: list[dict], torn_lines: int = 0) -> dict:
    p, a, c = compact(P, A, C)
    ident = identity_pass(p, a, c).persist(StorageLevel.MEMORY_AND_DISK)
    groups = breakdowns(ident, faults)
    per_partition, mismatched = position_pass(p, a, c)
    part_rows = {(r["topic"], r["partition"]): r.asDict() for r in per_partition.collect()}
    ack_offset_mismatch = mismatched.join(ident.filter(F.col("a_n") > 0).select("idh", "seq"), ["idh", "seq"]).count()

    total = groups["total"][0] if groups["total"] else {}
    counts = {k: int(total.get(k) or 0) for k in COUNT_NAMES if k in total}
    counts["ack_offset_mismatch"] = int(ack_offset_mismatch)
    counts["divergent_offsets"] = sum(int(r["divergent_offsets"] or 0) for r in part_rows.values())
    counts["reordered"] = sum(int(r["reordered"] or 0) for r in part_rows.values())
    counts["max_ack_gap_ms"] = max((int(r["max_ack_gap_ms"] or 0) for r in part_rows.values()), default=0)
    counts["torn_lines"] = torn_lines
    counts = {k: counts.get(k, 0) for k in COUNT_NAMES}

    fault_stats = recovery(p, faults)
    for f, stats in zip(faults, fault_stats):
        stats.update(fault=f.get("fault"), target=f.get("target"), start_ms=f["start_ms"], end_ms=f.get("end_ms"))
    first_lost, last_lost = total.get("lost_first_send_ms"), total.get("lost_last_send_ms")
    anchor = faults[0]["start_ms"] if faults else None
    loss_window = None
    if first_lost is not None:
        loss_window = {"first_lost_send_ms": first_lost, "last_lost_send_ms": last_lost,
                       "span_ms": last_lost - first_lost,
                       "first_relative_to_fault_ms": first_lost - anchor if anchor else None,
                       "last_relative_to_fault_ms": last_lost - anchor if anchor else None}

    def table(rows, keys):
        keep = ("produced", "acked", "failed", "indeterminate", "acked_lost", "acked_unseen", "failed_present",
                "indeterminate_present", "duplicates_in_log", "duplicates_delivered", "latency_p50_ms",
                "latency_p99_ms")
        return [{**{k: r[k] for k in keys}, **{k: r[k] for k in keep}} for r in rows]

    by_partition = []
    for r in sorted(groups["partition"], key=lambda r: (str(r["topic"]), r["partition"] if r["partition"] is not None else -1)):
        if r["topic"] is None:
            continue  # phantoms: no produced row, no partition of their own here
        extra = part_rows.get((r["topic"], r["partition"]), {})
        by_partition.append({**table([r], ("topic", "partition"))[0],
                             "max_ack_gap_ms": int(extra.get("max_ack_gap_ms") or 0),
                             "reordered": int(extra.get("reordered") or 0),
                             "divergent_offsets": int(extra.get("divergent_offsets") or 0)})
    ident.unpersist()
    return {
        "counts": counts,
        "phases": sorted(table([r for r in groups["phase"] if r["phase"]], ("phase",)), key=_phase_order(faults)),
        "by_dc": sorted(table([r for r in groups["dc"] if r["dc"]], ("dc",)), key=lambda r: r["dc"]),
        "by_partition": by_partition,
        "faults": fault_stats,
        "data_loss_window": loss_window,
        "timeline": {
            "send": sorted(({"sec": r["send_sec"], "acked": r["acked"], "failed": r["failed"],
                             "indeterminate": r["indeterminate"], "acked_lost": r["acked_lost"],
                             "duplicates_in_log": r["duplicates_in_log"], "latency_p50_ms": r["latency_p50_ms"],
                             "latency_p99_ms": r["latency_p99_ms"]}
                            for r in groups["send_sec"] if r["send_sec"] is not None), key=lambda r: r["sec"]),
            "acks": sorted(({"sec": r["ack_sec"], "acked": r["acked"]}
                            for r in groups["ack_sec"] if r["ack_sec"] is not None), key=lambda r: r["sec"]),
        },
    }


def _phase_order(faults):
    order = {"no fault": 0, "before": 0}
    for i, f in enumerate(faults):
        order[f"during {f.get('fault')} {f.get('target')}"] = 2 * i + 1
        order[f"after {f.get('fault')} {f.get('target')}"] = 2 * i + 2
    return lambda r: order.get(r["phase"], 99)
