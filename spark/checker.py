"""The counts, as a pure function of the drill record's DataFrames.

Two shuffles do all the row-level work, on compact keys (64-bit hashes, no strings, no Python
UDFs):
  * identity pass: produced ∪ audit ∪ consumed grouped by (xxhash64(producer_id), seq);
    everything per record (lost, unseen, present, duplicates, phantoms), then one aggregation at
    the finest grain (phase, DC, partition, second) that every coarser split adds up from;
  * position pass: acked-produced ∪ audit ∪ consumed hash-partitioned by (topic, partition) and
    sorted by position: offset mismatches and divergent offsets.
Two narrower sorts finish the job: the audit alone by producer and offset (reordering) and the
acknowledged rows alone by ack time (ack gaps, recovery time).
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
                        "ack_ms", st.cast("byte").alias("st"), "dc", F.xxhash64("dc").alias("dch"))
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
    # Only fixed-width columns in the aggregation buffer (strings would force a sort-based
    # aggregate): DC and topic travel as 64-bit hashes and are named again afterwards.
    u = (p.select("idh", "seq", F.lit(0).cast("byte").alias("src"), "st", "send_ms", "ack_ms", "dch", "th",
                  "partition")
         .unionByName(a.select("idh", "seq", F.lit(1).cast("byte").alias("src")), allowMissingColumns=True)
         .unionByName(c.select("idh", "seq", F.lit(2).cast("byte").alias("src")), allowMissingColumns=True))
    src = F.col("src")
    return u.groupBy("idh", "seq").agg(
        F.sum(F.when(src == 0, 1).otherwise(0)).alias("p_n"),
        F.sum(F.when(src == 1, 1).otherwise(0)).alias("a_n"),
        F.sum(F.when(src == 2, 1).otherwise(0)).alias("c_n"),
        F.max("st").alias("st"), F.max("send_ms").alias("send_ms"), F.max("ack_ms").alias("ack_ms"),
        F.max("dch").alias("dch"), F.max("th").alias("th"), F.max("partition").alias("partition"),
    )


ADDITIVE = ("produced", "acked", "failed", "indeterminate", "acked_lost", "acked_unseen", "failed_present",
            "indeterminate_present", "duplicates_in_log", "duplicates_delivered", "phantoms")


def breakdowns(ident: DataFrame, faults: list[dict], dc_names: dict, topic_names: dict) -> dict[str, list[dict]]:
    """All counts per phase, DC, partition and send second, plus the total. One aggregation at
    the finest grain (phase, dc, topic, partition, send second) gives a small table whose rows
    add up to every coarser split; latency percentiles, which do not add up, are computed per
    phase and per second on the acknowledged rows only."""
    st, a_n, c_n, p_n = F.col("st"), F.col("a_n"), F.col("c_n"), F.col("p_n")
    lost = (st == OK) & (a_n == 0)

    def n(cond):
        return F.sum(F.when(cond, 1).otherwise(0))

    d = ident.select("*", phase_expr(faults).alias("phase"), F.floor(F.col("send_ms") / 1000).alias("send_sec"))
    fine = d.groupBy("phase", "dch", "th", "partition", "send_sec").agg(
        F.sum(p_n).alias("produced"), F.sum(F.when(st == OK, p_n).otherwise(0)).alias("acked"),
        F.sum(F.when(st == FAIL, p_n).otherwise(0)).alias("failed"),
        F.sum(F.when(st == INFO, p_n).otherwise(0)).alias("indeterminate"),
        n(lost).alias("acked_lost"), n((st == OK) & (c_n == 0)).alias("acked_unseen"),
        n((st == FAIL) & (a_n > 0)).alias("failed_present"), n((st == INFO) & (a_n > 0)).alias("indeterminate_present"),
        F.sum(F.greatest(a_n - 1, F.lit(0))).alias("duplicates_in_log"),
        F.sum(F.greatest(c_n - 1, F.lit(0))).alias("duplicates_delivered"),
        F.sum(F.when(p_n == 0, a_n).otherwise(0)).alias("phantoms"),
        F.min(F.when(lost, F.col("send_ms"))).alias("lost_first_send_ms"),
        F.max(F.when(lost, F.col("send_ms"))).alias("lost_last_send_ms"),
    ).collect()
    ok = d.filter(st == OK).select("phase", "send_sec", (F.col("ack_ms") - F.col("send_ms")).alias("latency"),
                                   F.floor(F.col("ack_ms") / 1000).alias("ack_sec"))
    pct = F.percentile_approx("latency", [0.5, 0.99], 1000).alias("pct")
    latency = {("phase", r["phase"]): r["pct"] for r in ok.groupBy("phase").agg(pct).collect()}
    latency |= {("send_sec", r["send_sec"]): r["pct"] for r in ok.groupBy("send_sec").agg(pct).collect()}
    acks = [{"ack_sec": r["ack_sec"], "acked": r["count"]} for r in ok.groupBy("ack_sec").count().collect()]

    fine = [{**r.asDict(), "dc": dc_names.get(r["dch"]), "topic": topic_names.get(r["th"])} for r in fine]

    def roll(keys: tuple[str, ...]) -> list[dict]:
        groups: dict[tuple, dict] = {}
        for r in fine:
            k = tuple(r[c] for c in keys)
            g = groups.setdefault(k, {**dict(zip(keys, k)), **{c: 0 for c in ADDITIVE},
                                      "lost_first_send_ms": None, "lost_last_send_ms": None})
            for c in ADDITIVE:
                g[c] += r[c] or 0
            for c, pick in (("lost_first_send_ms", min), ("lost_last_send_ms", max)):
                if r[c] is not None:
                    g[c] = r[c] if g[c] is None else pick(g[c], r[c])
        out = list(groups.values())
        if len(keys) == 1 and keys[0] in ("phase", "send_sec"):
            for g in out:
                p50, p99 = latency.get((keys[0], g[keys[0]])) or (None, None)
                g["latency_p50_ms"], g["latency_p99_ms"] = p50, p99
        return out

    total = roll(())
    return {"total": total, "phase": roll(("phase",)), "dc": roll(("dc",)), "partition": roll(("topic", "partition")),
            "send_sec": roll(("send_sec",)), "ack_sec": acks}


def position_pass(p: DataFrame, a: DataFrame, c: DataFrame) -> tuple[DataFrame, DataFrame]:
    """Offsets: acked-produced ∪ audit ∪ consumed, hash-partitioned by (topic, partition) and
    grouped by position in one sort. Returns the consumed rows that disagree with the audit at
    their position, and the acked (idh, seq) whose audit position holds something else."""
    v = (p.filter(F.col("st") == OK).select("th", "topic", "partition", "offset", "idh", "seq",
                                            F.lit(0).cast("byte").alias("src"))
         .unionByName(a.select("th", "topic", "partition", "offset", "idh", "seq", F.lit(1).cast("byte").alias("src")))
         .unionByName(c.select("th", "topic", "partition", "offset", "idh", "seq", F.lit(2).cast("byte").alias("src")))
         .repartition("th", "partition"))
    src, is_a = F.col("src"), F.col("src") == 1
    w_pos = Window.partitionBy("th", "partition", "offset")
    v = v.select("*", F.sum(F.when(is_a, 1).otherwise(0)).over(w_pos).alias("a_cnt"),
                 F.max(F.when(is_a, F.col("idh"))).over(w_pos).alias("a_idh"),
                 F.max(F.when(is_a, F.col("seq"))).over(w_pos).alias("a_seq"))
    differs = (F.col("a_cnt") == 0) | (F.col("a_idh") != F.col("idh")) | (F.col("a_seq") != F.col("seq")) \
        | F.col("a_idh").isNull() | F.col("idh").isNull() | F.col("seq").isNull()
    flagged = v.filter((src != 1) & differs).select("src", "topic", "partition", "offset", "idh", "seq")
    return flagged.filter(src == 2), flagged.filter(src == 0).select("idh", "seq")


def reordering(a: DataFrame) -> DataFrame:
    """Per (topic, partition): audit rows whose seq is below their producer's largest seq at a
    lower offset. Sorts the audit alone (not the union)."""
    w = Window.partitionBy("th", "partition", "idh").orderBy("offset").rowsBetween(Window.unboundedPreceding, -1)
    return a.select("topic", "partition", "seq", F.max("seq").over(w).alias("prev_max")) \
        .groupBy("topic", "partition").agg(F.sum(F.when(F.col("seq") < F.col("prev_max"), 1).otherwise(0))
                                           .alias("reordered"))


def ack_gaps(p: DataFrame) -> DataFrame:
    """Acknowledged rows per partition in ack order with the previous ack time (shared by the max
    ack gap and the recovery time)."""
    w = Window.partitionBy("topic", "partition").orderBy("ack_ms")
    return p.filter(F.col("st") == OK).select("topic", "partition", "ack_ms", F.lag("ack_ms").over(w).alias("prev_ack_ms"))


def recovery(gaps: DataFrame, partitions: int, faults: list[dict]) -> list[dict]:
    """Per fault, the measured recovery time: for each partition, the longest gap between
    consecutive acks that overlaps the fault window ends with the partition's first ack "again";
    recovery = the slowest partition's first ack again minus the fault start. None when a
    partition never acknowledged anything after the fault start."""
    out = []
    for f in faults:
        start, end = f["start_ms"], f.get("end_ms") or 2**62
        rows = gaps.filter((F.col("ack_ms") >= start) & (F.col("prev_ack_ms") <= end)) \
            .groupBy("topic", "partition") \
            .agg(F.max_by("ack_ms", F.col("ack_ms") - F.col("prev_ack_ms")).alias("back_ms")).collect()
        back = max((r["back_ms"] for r in rows), default=None)
        out.append({"recovery_ms": (back - start) if back is not None and len(rows) == partitions else None,
                    "partitions_acking_after_start": len(rows), "partitions": partitions})
    return out


def run(P: DataFrame, A: DataFrame, C: DataFrame, faults: list[dict], torn_lines: int = 0) -> dict:
    p, a, c = compact(P, A, C)
    ident = identity_pass(p, a, c).persist(StorageLevel.MEMORY_AND_DISK)
    names = p.groupBy("dch", "th").agg(F.max("dc").alias("dc"), F.max("topic").alias("topic")).collect()
    groups = breakdowns(ident, faults, {r["dch"]: r["dc"] for r in names}, {r["th"]: r["topic"] for r in names})
    divergent, mismatched = position_pass(p, a, c)
    divergent = divergent.persist(StorageLevel.MEMORY_AND_DISK)
    part_rows: dict[tuple, dict] = {}
    for r in divergent.groupBy("topic", "partition").agg(
            F.countDistinct("offset").alias("divergent_offsets")).collect():
        part_rows.setdefault((r["topic"], r["partition"]), {})["divergent_offsets"] = r["divergent_offsets"]
    divergent.unpersist()
    for r in reordering(a).collect():
        part_rows.setdefault((r["topic"], r["partition"]), {})["reordered"] = r["reordered"]
    gaps = ack_gaps(p).persist(StorageLevel.MEMORY_AND_DISK)
    for r in gaps.groupBy("topic", "partition").agg(
            F.max(F.col("ack_ms") - F.col("prev_ack_ms")).alias("max_ack_gap_ms")).collect():
        part_rows.setdefault((r["topic"], r["partition"]), {})["max_ack_gap_ms"] = r["max_ack_gap_ms"]
    # Mismatches are normally rare: broadcast them rather than shuffle the whole identity table.
    mismatched = mismatched.persist(StorageLevel.MEMORY_AND_DISK)
    small = mismatched.count() <= 2_000_000
    ack_offset_mismatch = ident.filter(F.col("a_n") > 0).select("idh", "seq").join(
        F.broadcast(mismatched) if small else mismatched, ["idh", "seq"]).count()
    mismatched.unpersist()

    total = groups["total"][0] if groups["total"] else {}
    counts = {k: int(total.get(k) or 0) for k in COUNT_NAMES if k in total}
    counts["ack_offset_mismatch"] = int(ack_offset_mismatch)
    counts["divergent_offsets"] = sum(int(r.get("divergent_offsets") or 0) for r in part_rows.values())
    counts["reordered"] = sum(int(r.get("reordered") or 0) for r in part_rows.values())
    counts["max_ack_gap_ms"] = max((int(r.get("max_ack_gap_ms") or 0) for r in part_rows.values()), default=0)
    counts["torn_lines"] = torn_lines
    counts = {k: counts.get(k, 0) for k in COUNT_NAMES}

    partitions = len({(r["topic"], r["partition"]) for r in groups["partition"] if r["topic"] is not None})
    fault_stats = recovery(gaps, partitions, faults)
    gaps.unpersist()
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
        return [{**{k: r[k] for k in keys}, **{k: r.get(k) for k in keep}} for r in rows]

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
                             "duplicates_in_log": r["duplicates_in_log"], "latency_p50_ms": r.get("latency_p50_ms"),
                             "latency_p99_ms": r.get("latency_p99_ms")}
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
