"""The replicated-stack checks: what MirrorMaker 2 copied, and what a failed-over consumer group
saw (RECORD.md, "Mirrors"). A pure function of the drill record, like the rest of the verifier;
the stretched-cluster counts of the source cluster are spark/checker.py's, unchanged.

Per flow "<source>-><target>" (topology.json `mirrors`), with X the drill topic and R its copy:
  mirrored                 acknowledged source records (producer_id, seq) present in R
  not_mirrored             acknowledged, in the source's X, absent from R (after the catch-up)
  replication_duplicates   copies in R beyond those in X
  target_phantoms          identities in R that X does not hold
  target_order_violations  per producer and partition, a record after a later one in R's order
  lag_ms                   R's append time minus X's, per record: p50, p99, max; steady_lag_ms: the
                           records of the 10 s ending 2 s before the first fault (the drill waits
                           for MM2 to catch up with the new topic first, so this is MM2 keeping up)
  rpo                      at the failover (else the first fault on a source DC; none without
                           either): acknowledged records R did not hold yet, and the window of
                           acknowledgements they span: from the oldest of them to the source's
                           last acknowledgement before that instant (the writes a failover loses)
  catch_up_ms              after the last heal: until R held every record acknowledged before it
Per cluster: mirror_loops, records of the cluster's own that came back in a copy.
Per failover: failover_redelivered (processed on both sides), failover_skipped (in R below
where the failed-over consumers got to, and never processed on either side; must be 0).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from spark.ledgers import load

ID = ["producer_id", "seq"]
# The steady lag: records appended after the copy first caught up (mirror-waits.jsonl; before
# it, MM2 was still finding the drill's new topic and copying its start) and up to 2 s before the
# first fault, at most the last 10 s of that: what MM2 had not copied yet when the fault came is
# the fault's (the RPO, the catch-up), not the steady state's.
STEADY_WINDOW_MS, STEADY_MARGIN_MS = 10_000, 2_000


def _audit(spark: SparkSession, run_dir: str, cluster: str) -> DataFrame:
    df, info = load(spark, run_dir, "audit", cluster)
    return df.select("topic", "partition", "offset", *ID, "timestamp_ms").filter(F.col("producer_id").isNotNull())


def _consumed(spark: SparkSession, run_dir: str) -> DataFrame:
    """Every consumed row with its cluster (null: the home cluster, as a stretched record has it)."""
    df, info = load(spark, run_dir, "consumed")
    if info["empty"]:
        return df.select("group", "topic", "partition", "offset", *ID).withColumn("cluster", F.lit(None).cast("string"))
    if "cluster" not in df.columns:
        df = spark.read.json(info["files"]) if info["format"] == "jsonl" else spark.read.parquet(*info["files"])
        if "cluster" not in df.columns:
            df = df.withColumn("cluster", F.lit(None).cast("string"))
    return df.select("group", "topic", "partition", "offset", *ID, "cluster").filter(F.col("producer_id").isNotNull())


def _pct(df: DataFrame, col: str) -> dict:
    row = df.agg(F.expr(f"percentile({col}, 0.5)").alias("p50"), F.expr(f"percentile({col}, 0.99)").alias("p99"),
                 F.max(col).alias("max"), F.count(col).alias("n")).first()
    return {k: (None if row[k] is None else int(round(row[k]))) for k in ("p50", "p99", "max", "n")}


def _instant(faults: list[dict], failovers: list[dict], flow: dict, source_dcs: list[str]) -> int | None:
    """When the RPO is taken: the flow's failover, else the first fault on one of its source's
    DCs (None: nothing happened to the source, so nothing was stranded there)."""
    own = [f["at_ms"] for f in failovers if f["from"] == flow["source"] and f["to"] == flow["target"]]
    lost = [f["start_ms"] for f in faults if f.get("target") in source_dcs]
    return own[0] if own else (lost[0] if lost else None)


def check_flow(spark, run_dir: str, name: str, flow: dict, topic: str, P: DataFrame, faults: list[dict],
               failovers: list[dict], source_dcs: list[str], caught_up_ms: int | None = None) -> dict:
    remote = flow["remote_topic_prefix"] + topic
    src = _audit(spark, run_dir, flow["source"]).filter(F.col("topic") == topic)
    dst = _audit(spark, run_dir, flow["target"]).filter(F.col("topic") == remote)
    src_ids = src.groupBy(*ID).agg(F.count("*").alias("src_n"), F.min("offset").alias("src_off"),
                                   F.min("timestamp_ms").alias("src_ts"), F.first("partition").alias("partition"))
    dst_ids = dst.groupBy(*ID).agg(F.count("*").alias("dst_n"), F.min("offset").alias("dst_off"),
                                   F.min("timestamp_ms").alias("dst_ts"))
    acked = P.filter((F.col("status") == "ok") & F.col("dc").isin(*source_dcs)).select(*ID, "ack_ms")
    start = faults[0]["start_ms"] if faults else None
    end = max((f.get("end_ms") or 0) for f in faults) if faults else None
    phase = (F.when(F.col("ack_ms") < F.lit(start), "before").when(F.col("ack_ms") <= F.lit(end), "during")
             .otherwise("after")) if faults else F.lit("before")
    joined = (acked.join(src_ids, ID, "left").join(dst_ids, ID, "left")
              .withColumn("phase", phase).cache())
    try:
        counts_row = joined.agg(
            F.count("*").alias("acked"),
            F.sum(F.col("dst_n").isNotNull().cast("long")).alias("mirrored"),
            F.sum((F.col("src_n").isNotNull() & F.col("dst_n").isNull()).cast("long")).alias("not_mirrored"),
            F.sum((F.col("src_n").isNull()).cast("long")).alias("acked_absent_from_source"),
        ).first().asDict()
        by_phase = {r["phase"]: r["n"] for r in joined.filter(F.col("src_n").isNotNull() & F.col("dst_n").isNull())
                    .groupBy("phase").agg(F.count("*").alias("n")).collect()}
        at = _instant(faults, failovers, flow, source_dcs)
        rpo = {"at_ms": at, "records": None, "seconds": None}
        if at is not None:
            missing = joined.filter((F.col("ack_ms") <= at) & (F.col("dst_ts").isNull() | (F.col("dst_ts") > at)))
            row = missing.agg(F.count("*").alias("n"), F.min("ack_ms").alias("oldest")).first()
            last = joined.filter(F.col("ack_ms") <= at).agg(F.max("ack_ms")).first()[0]
            rpo = {"at_ms": at, "records": int(row["n"]),
                   "seconds": round((last - row["oldest"]) / 1000, 3) if row["n"] else 0.0}
        catch_up = None
        if end:
            row = joined.filter((F.col("ack_ms") <= end) & F.col("dst_ts").isNotNull()).agg(F.max("dst_ts")).first()
            catch_up = max(0, int(row[0]) - end) if row[0] is not None else None
        lag = joined.filter(F.col("dst_ts").isNotNull()).withColumn("lag", F.col("dst_ts") - F.col("src_ts"))
        lag_all = _pct(lag, "lag")
        timeline = [{"sec": r["sec"], "p50": int(r["p50"]), "p99": int(r["p99"]), "records": r["n"]}
                    for r in lag.groupBy(F.floor(F.col("src_ts") / 1000).alias("sec"))
                    .agg(F.expr("percentile(lag, 0.5)").alias("p50"), F.expr("percentile(lag, 0.99)").alias("p99"),
                         F.count("*").alias("n")).orderBy("sec").collect()]
        steady_end = start - STEADY_MARGIN_MS if start else None
        steady_start = max(steady_end - STEADY_WINDOW_MS, caught_up_ms or 0) if start else None
        lag_steady = _pct(lag.filter((F.col("src_ts") < steady_end) & (F.col("src_ts") >= steady_start)),
                          "lag") if start else lag_all
    finally:
        joined.unpersist()
    both = dst_ids.join(src_ids, ID, "left")
    dup_row = both.agg(F.sum(F.greatest(F.col("dst_n") - F.coalesce(F.col("src_n"), F.lit(0)), F.lit(0))
                             * F.col("src_n").isNotNull().cast("long")).alias("dups"),
                       F.sum(F.col("src_n").isNull().cast("long")).alias("phantoms")).first()
    order = Window.partitionBy("producer_id", "partition").orderBy("dst_off")
    inversions = (both.filter(F.col("src_off").isNotNull())
                  .withColumn("prev_src", F.lag("src_off").over(order))
                  .filter(F.col("src_off") < F.col("prev_src")).count())
    return {
        "source": flow["source"], "target": flow["target"], "topic": topic, "remote_topic": remote,
        "counts": {"acked": int(counts_row["acked"]), "mirrored": int(counts_row["mirrored"] or 0),
                   "not_mirrored": int(counts_row["not_mirrored"] or 0),
                   "not_mirrored_by_phase": {k: int(v) for k, v in sorted(by_phase.items())},
                   "acked_absent_from_source": int(counts_row["acked_absent_from_source"] or 0),
                   "replication_duplicates": int(dup_row["dups"] or 0), "target_phantoms": int(dup_row["phantoms"] or 0),
                   "target_order_violations": int(inversions)},
        "lag_ms": lag_all, "steady_lag_ms": {**lag_steady, "from_ms": steady_start, "to_ms": steady_end}, "rpo": rpo, "catch_up_ms": catch_up,
        "lag_timeline": timeline,  # per second of the source's append time
    }


def mirror_loops(spark, run_dir: str, clusters: list[str]) -> dict[str, int]:
    """Rows in a cluster's audit under a remote topic whose names say they started in that very
    cluster (`<cluster>.…` or `….<cluster>.…`): a record copied back to its origin."""
    out = {}
    for c in clusters:
        a = _audit(spark, run_dir, c)
        out[c] = a.filter(F.col("topic").startswith(f"{c}.") | F.col("topic").contains(f".{c}.")).count()
    return out


def check_failover(spark, run_dir: str, fo: dict, C: DataFrame) -> dict:
    """One consumer-group failover: redelivered and skipped identities (see the module doc)."""
    group = C.filter(F.col("group") == fo["group"])
    before = group.filter(F.col("cluster").isNull() | (F.col("cluster") == fo["from"])).select(*ID).distinct()
    after_rows = group.filter(F.col("cluster") == fo["to"])
    after = after_rows.select(*ID).distinct()
    reached = after_rows.groupBy("partition").agg(F.max("offset").alias("reached"))
    copy = _audit(spark, run_dir, fo["to"]).filter(F.col("topic") == fo["topic"])
    below = copy.join(reached, "partition").filter(F.col("offset") <= F.col("reached")).select(*ID).distinct()
    processed = before.union(after).distinct()
    skipped = below.join(processed, ID, "left_anti").count()
    first = {int(p): o for p, o in (fo.get("offsets") or {}).items()}
    return {"group": fo["group"], "from": fo["from"], "to": fo["to"], "at_ms": fo["at_ms"], "topic": fo["topic"],
            "translated_offsets": first, "processed_before": before.count(), "processed_after": after.count(),
            "failover_redelivered": before.join(after, ID).count(), "failover_skipped": skipped,
            "unread_at_end": copy.join(reached, "partition", "left").filter(
                F.col("reached").isNull() | (F.col("offset") > F.col("reached"))).count()}


def check(spark, run_dir: str, topology: dict, faults: list[dict], failovers: list[dict],
          waits: list[dict] = ()) -> dict:
    """summary.json's `mirrors`, `mirror_loops` and `failovers` for a replicated record."""
    start = faults[0]["start_ms"] if faults else None
    P = load(spark, run_dir, "produced")[0]  # every cluster's producers (verify.py's P: the home cluster's)
    topic_row = P.select("topic").filter(F.col("topic").isNotNull()).limit(1).collect()
    topic = topic_row[0][0] if topic_row else None
    clusters = topology["clusters"]
    mirrors = {}
    for name, flow in sorted(topology["mirrors"].items()):
        dcs = [dc["name"] for dc in clusters[flow["source"]]["datacenters"]]
        caught = [w["caught_up_ms"] for w in waits if w["flow"] == name and start and w["caught_up_ms"] < start]
        mirrors[name] = check_flow(spark, run_dir, name, flow, topic, P, faults, failovers, dcs,
                                   caught[-1] if caught else None)
    C = _consumed(spark, run_dir)
    return {"mirrors": mirrors, "mirror_loops": mirror_loops(spark, run_dir, sorted(clusters)),
            "failovers": [check_failover(spark, run_dir, fo, C) for fo in failovers]}

