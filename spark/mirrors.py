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
  mm2                      the MM2 node carrying the flow, from the first fault on (mirror-events.jsonl):
                           restarts (its process began again) and rebalances (Connect's, per herder);
                           null when the record holds no events file
Per cluster: mirror_loops, records of the cluster's own that came back in a copy (by the copy's
name, or by the origin cluster the records carry in a header).
Per failover: failover_redelivered (processed on both sides), failover_skipped (in R below
where the failed-over consumers got to, and never processed on either side; must be 0).
"""
from __future__ import annotations

from pyspark import StorageLevel
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


def _instant(faults: list[dict], failovers: list[dict], flow: dict, source_dcs: list[str]) -> int | None:
    """When the RPO is taken: the flow's failover, else the first fault on one of its source's
    DCs (None: nothing happened to the source, so nothing was stranded there)."""
    own = [f["at_ms"] for f in failovers if f["from"] == flow["source"] and f["to"] == flow["target"]]
    lost = [f["start_ms"] for f in faults if f.get("target") in source_dcs]
    return own[0] if own else (lost[0] if lost else None)


def check_flow(spark, run_dir: str, name: str, flow: dict, topic: str, P: DataFrame, faults: list[dict],
               failovers: list[dict], source_dcs: list[str], caught_up_ms: int | None = None) -> dict:
    """One flow's counts (module doc). One row per identity (acknowledged, in X, in R: a full
    join, cached), then one aggregation for the counts, the RPO, the catch-up and the lag; a
    second pass for the lag per second and a third for the order. Counts are exact; the lag's
    percentiles are Spark's percentile_approx (relative error 1/10,000)."""
    remote = flow["remote_topic_prefix"] + topic
    src = _audit(spark, run_dir, flow["source"]).filter(F.col("topic") == topic)
    dst = _audit(spark, run_dir, flow["target"]).filter(F.col("topic") == remote)
    src_ids = src.groupBy(*ID).agg(F.count("*").alias("src_n"), F.min("offset").alias("src_off"),
                                   F.min("timestamp_ms").alias("src_ts"), F.first("partition").alias("partition"))
    dst_ids = dst.groupBy(*ID).agg(F.count("*").alias("dst_n"), F.min("offset").alias("dst_off"),
                                   F.min("timestamp_ms").alias("dst_ts"))
    acked = P.filter((F.col("status") == "ok") & F.col("dc").isin(*source_dcs)).select(*ID, "ack_ms")
    full = acked.join(src_ids, ID, "full").join(dst_ids, ID, "full").persist(StorageLevel.MEMORY_AND_DISK)
    start = faults[0]["start_ms"] if faults else None
    end = max((f.get("end_ms") or 0) for f in faults) if faults else None
    at = _instant(faults, failovers, flow, source_dcs)
    steady_end = start - STEADY_MARGIN_MS if start else None
    steady_start = max(steady_end - STEADY_WINDOW_MS, caught_up_ms or 0) if start else None
    ack, in_x, in_r = F.col("ack_ms").isNotNull(), F.col("src_n").isNotNull(), F.col("dst_n").isNotNull()
    lag = F.when(in_x & in_r, F.col("dst_ts") - F.col("src_ts"))

    def n(cond):
        return F.sum(F.coalesce(cond, F.lit(False)).cast("long"))

    def pct(col, q):
        return F.percentile_approx(col, q, 10_000)

    steady = F.when((F.col("src_ts") < F.lit(steady_end)) & (F.col("src_ts") >= F.lit(steady_start)), lag) \
        if start else lag
    missed = ack & (F.col("ack_ms") <= F.lit(at)) & (F.col("dst_ts").isNull() | (F.col("dst_ts") > F.lit(at))) \
        if at is not None else F.lit(False)
    stranded = ack & in_x & ~in_r
    phases = {"before": F.col("ack_ms") < F.lit(start), "during": F.col("ack_ms") <= F.lit(end)} if faults else {}
    try:
        r = full.agg(
            n(ack).alias("acked"), n(ack & in_r).alias("mirrored"), n(stranded).alias("not_mirrored"),
            n(ack & ~in_x).alias("absent"),
            F.sum(F.when(in_x & in_r, F.greatest(F.col("dst_n") - F.col("src_n"), F.lit(0)))).alias("dups"),
            n(in_r & ~in_x).alias("phantoms"),
            n(stranded & phases["before"]).alias("before") if phases else F.lit(0).alias("before"),
            n(stranded & ~phases["before"] & phases["during"]).alias("during") if phases else F.lit(0).alias("during"),
            n(missed).alias("rpo_n"), F.min(F.when(missed, F.col("ack_ms"))).alias("rpo_oldest"),
            F.max(F.when(F.col("ack_ms") <= F.lit(at), F.col("ack_ms"))).alias("last_ack") if at is not None
            else F.lit(None).alias("last_ack"),
            F.max(F.when(ack & (F.col("ack_ms") <= F.lit(end)), F.col("dst_ts"))).alias("caught") if end
            else F.lit(None).alias("caught"),
            pct(lag, 0.5).alias("p50"), pct(lag, 0.99).alias("p99"), F.max(lag).alias("max"), F.count(lag).alias("n"),
            pct(steady, 0.5).alias("s50"), pct(steady, 0.99).alias("s99"), F.max(steady).alias("smax"),
            F.count(steady).alias("sn"),
        ).first().asDict()
        timeline = [{"sec": t["sec"], "p50": int(t["p50"]), "p99": int(t["p99"]), "records": t["n"]}
                    for t in full.filter(in_x & in_r).groupBy(F.floor(F.col("src_ts") / 1000).alias("sec"))
                    .agg(pct(lag, 0.5).alias("p50"), pct(lag, 0.99).alias("p99"), F.count("*").alias("n"))
                    .orderBy("sec").collect()]
        order = Window.partitionBy("producer_id", "partition").orderBy("dst_off")
        inversions = (full.filter(in_x & in_r).select("producer_id", "partition", "dst_off", "src_off")
                      .withColumn("prev_src", F.lag("src_off").over(order))
                      .filter(F.col("src_off") < F.col("prev_src")).count())
    finally:
        full.unpersist()
    stranded_by = {k: int(r[k]) for k in ("before", "during") if r[k]}
    if r["not_mirrored"] - sum(stranded_by.values()):
        stranded_by["after"] = int(r["not_mirrored"] - sum(stranded_by.values()))
    rpo = {"at_ms": at, "records": None, "seconds": None}
    if at is not None:
        rpo = {"at_ms": at, "records": int(r["rpo_n"]),
               "seconds": round((r["last_ack"] - r["rpo_oldest"]) / 1000, 3) if r["rpo_n"] else 0.0}

    def stats(p50, p99, mx, count) -> dict:
        return {"p50": None if r[p50] is None else int(r[p50]), "p99": None if r[p99] is None else int(r[p99]),
                "max": None if r[mx] is None else int(r[mx]), "n": int(r[count])}

    return {
        "source": flow["source"], "target": flow["target"], "topic": topic, "remote_topic": remote,
        "counts": {"acked": int(r["acked"]), "mirrored": int(r["mirrored"]), "not_mirrored": int(r["not_mirrored"]),
                   "not_mirrored_by_phase": dict(sorted(stranded_by.items())),
                   "acked_absent_from_source": int(r["absent"]), "replication_duplicates": int(r["dups"] or 0),
                   "target_phantoms": int(r["phantoms"]), "target_order_violations": int(inversions)},
        "lag_ms": stats("p50", "p99", "max", "n"),
        "steady_lag_ms": {**stats("s50", "s99", "smax", "sn"), "from_ms": steady_start, "to_ms": steady_end},
        "rpo": rpo, "catch_up_ms": None if r["caught"] is None else max(0, int(r["caught"]) - end),
        "lag_timeline": timeline,  # per second of the source's append time
    }


def _origins(spark, run_dir: str, cluster: str) -> DataFrame | None:
    """topic and origin of each row of the cluster's audit (origin: the `dcdrill-origin` header the
    audit read; null in a record written before headers carried it). None: no audit file."""
    _, info = load(spark, run_dir, "audit", cluster)
    if info["empty"]:
        return None
    if info["format"] == "parquet":
        df = spark.read.parquet(*info["files"])
        if "origin" not in df.columns:
            df = df.withColumn("origin", F.lit(None).cast("string"))
    else:
        df = spark.read.schema("topic string, producer_id string, origin string").json(info["files"])
    return df.filter(F.col("producer_id").isNotNull()).select("topic", "origin")


def mirror_loops(spark, run_dir: str, clusters: list[str], topic: str | None) -> dict[str, int]:
    """Rows in a cluster's audit that started in that very cluster yet sit in a copy: by the copy's
    name (`<cluster>.…` or `….<cluster>.…`), or by the origin header MM2 copied with them (any
    topic but the cluster's own drill topic)."""
    out = {}
    for c in clusters:
        a = _origins(spark, run_dir, c)
        if a is None:
            out[c] = 0
            continue
        named = F.col("topic").startswith(f"{c}.") | F.col("topic").contains(f".{c}.")
        came_back = (F.col("origin") == c) & (F.col("topic") != F.lit(topic))
        out[c] = a.filter(named | F.coalesce(came_back, F.lit(False))).count()
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


def mm2_events(events: list[dict] | None, flow: str, since_ms: int | None) -> dict | None:
    """The flow's MM2 node's restarts and rebalances from `since_ms` on (None: every event)."""
    if events is None:
        return None
    own = [e for e in events if flow in e["flows"] and (since_ms is None or e["at_ms"] >= since_ms)]
    return {"restarts": sum(e["event"] == "start" for e in own), "rebalances": sum(e["event"] == "rebalance" for e in own)}


def check(spark, run_dir: str, topology: dict, faults: list[dict], failovers: list[dict],
          waits: list[dict] = (), events: list[dict] | None = None) -> dict:
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
        mirrors[name]["mm2"] = mm2_events(events, name, start)
    C = _consumed(spark, run_dir)
    return {"mirrors": mirrors, "mirror_loops": mirror_loops(spark, run_dir, sorted(clusters), topic),
            "failovers": [check_failover(spark, run_dir, fo, C) for fo in failovers]}

