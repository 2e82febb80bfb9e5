"""The replicated-stack checks: what MirrorMaker 2 copied, and what a failed-over consumer group
saw (RECORD.md, "Mirrors"). A pure function of the drill record, like the rest of the verifier;
the stretched-cluster counts of the source cluster are spark/checker.py's, unchanged.

Per flow "<source>-><target>" (topology.json `mirrors`), with X the drill topic and R its copy:
  mirrored                 acknowledged source records (producer_id, seq) present in R
  not_mirrored             acknowledged, in the source's X, absent from R (after the catch-up)
  replication_duplicates   copies in R beyond those in X
  target_phantoms          identities in R that X does not hold
  target_order_violations  per producer and partition, records R holds after one whose source
                           offset is higher (one record copied six places early: six violations)
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

import concurrent.futures
import json

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from dcdrill.record.reader import RecordReader
from dcdrill.spark.identities import COLUMNAR_SCAN
from dcdrill.spark.ledgers import load

ID = ["producer_id", "seq"]
# The steady lag: records appended after the copy first caught up (mirror-waits.jsonl; before
# it, MM2 was still finding the drill's new topic and copying its start) and up to 2 s before the
# first fault, at most the last 10 s of that: what MM2 had not copied yet when the fault came is
# the fault's (the RPO, the catch-up), not the steady state's.
STEADY_WINDOW_MS, STEADY_MARGIN_MS = 10_000, 2_000


def _audit(spark: SparkSession, record: RecordReader, cluster: str) -> tuple[DataFrame, DataFrame | None]:
    """The cluster's audit rows with an identity, and its audit as read where that is plain Parquet."""
    df, info = load(spark, record, "audit", cluster)
    return df.select("topic", "partition", "offset", *ID, "timestamp_ms").filter(
        F.col("producer_id").isNotNull()
    ), info["plain"]


def _consumed(spark: SparkSession, record: RecordReader) -> tuple[DataFrame, DataFrame | None]:
    """Every consumed row with its cluster (null: the home cluster, as a stretched record has it),
    and the consumed ledger as read where that is plain Parquet."""
    df, info = load(spark, record, "consumed")
    if info["empty"]:
        return df.select("group", "topic", "partition", "offset", *ID).withColumn(
            "cluster", F.lit(None).cast("string")
        ), None
    if "cluster" not in df.columns:  # read again with every column: plain Parquet has them already
        df = (
            info["plain"]
            if info["plain"] is not None
            else spark.read.json(info["files"])
            if info["format"] == "jsonl"
            else spark.read.parquet(*info["files"])
        )
        if "cluster" not in df.columns:
            df = df.withColumn("cluster", F.lit(None).cast("string"))
    return df.select("group", "topic", "partition", "offset", *ID, "cluster").filter(
        F.col("producer_id").isNotNull()
    ), info["plain"]


def _instant(faults: list[dict], failovers: list[dict], flow: dict, source_dcs: list[str]) -> int | None:
    """When the RPO is taken: the flow's failover, else the first fault on one of its source's
    DCs (None: nothing happened to the source, so nothing was stranded there)."""
    own = [f["at_ms"] for f in failovers if f["from"] == flow["source"] and f["to"] == flow["target"]]
    lost = [f["start_ms"] for f in faults if f.get("target") in source_dcs]
    return own[0] if own else (lost[0] if lost else None)


def narrow_side(df: DataFrame, name: str, ts: str | None, logged: bool) -> DataFrame:
    """One side's rows as the JVM fold reads them (spark/jvm/MirrorFold.java names the columns and
    the sides): a 64-bit hash for the producer id, the seq, which side the row is, its time
    (acknowledgement, or append time in X or R; none for a consumed row), and for X and R its
    offset and partition."""
    fold = df.sparkSession._jvm.dcdrill.MirrorFold
    none_long, none_int = F.lit(None).cast("long"), F.lit(None).cast("int")
    cols = {
        "idh": F.xxhash64("producer_id"),
        "seq": F.col("seq").cast("long"),
        "side": F.lit(list(fold.SIDES).index(name)).cast("byte"),
        "ts": F.col(ts).cast("long") if ts else F.lit(0).cast("long"),
        "offset": F.col("offset").cast("long") if logged else none_long,
        "partition": F.col("partition").cast("int") if logged else none_int,
    }
    return df.select(*[cols[c].alias(c) for c in fold.COLUMNS])


def packed_side(
    df: DataFrame, plain: DataFrame | None, name: str, ts: str | None, where: dict[str, list], partitions: int
):
    """One side's packed chunks for the fold: read batch by batch when its ledger is plain Parquet
    (MirrorBatches.side, `where` its filter), else narrowed in SQL from `df`, filtered already
    (narrow_side: the reference the batch-by-batch reading is tested against)."""
    jvm = df.sparkSession._jvm.dcdrill
    if plain is not None:  # a column the ledger lacks is null on every row: a test that lets nulls through drops
        where = {c: values for c, values in where.items() if c in plain.columns or None not in values}
    if (
        plain is not None
        and df.sparkSession.conf.get(COLUMNAR_SCAN, "true").lower() != "false"
        and all(c in plain.columns for c in where)
    ):
        chunks = jvm.MirrorBatches.side(plain._jdf, name, ts, where, partitions)
        if chunks is not None:
            return chunks
    return jvm.MirrorFold.packed(narrow_side(df, name, ts, name in ("source", "target"))._jdf, partitions)


def consumed_sides(C_plain: DataFrame | None, fo: dict, partitions: int):
    """The failed-over group's consumed rows before and after its failover as the fold's two
    consumed sides, read once batch by batch (MirrorBatches.consumed, which also finds how far
    the group got in R): the JVM's Consumed, or None where the ledger is not plain Parquet with
    `group` and `cluster` columns (the caller then narrows each side in SQL)."""
    if (
        C_plain is None
        or not {"group", "cluster"} <= set(C_plain.columns)
        or C_plain.sparkSession.conf.get(COLUMNAR_SCAN, "true").lower() == "false"
    ):
        return None
    return C_plain.sparkSession._jvm.dcdrill.MirrorBatches.consumed(
        C_plain._jdf, fo["group"], [None, fo["from"]], [fo["to"]], partitions
    )


def fold_sides(
    spark, sides: list, instants: dict[str, int | None], reached: dict[int, int] | None, partitions: int, consumed=None
) -> dict:
    """The flow's counts from its sides' packed chunks (packed_side, consumed_sides), as
    spark/jvm/MirrorFold.java folds them: `instants` start, end, at, steady_from and steady_to.
    With a failover folded in, either `reached`, the highest offset of R its group consumed per
    partition, or `consumed` (consumed_sides' Consumed, among the sides), which finds it as its
    chunks are read."""
    packed = sides[0]
    for more in sides[1:]:
        packed = packed.union(more)
    fold = spark._jvm.dcdrill.MirrorFold
    if consumed is not None:
        return json.loads(fold.foldReaching(packed, instants, consumed, partitions))
    return json.loads(fold.fold(packed, instants, reached, partitions))


# Seqs per task of the fold: about 128 of MirrorFold's 4096-seq blocks (~25 MB of arrays) each.
ROWS_PER_TASK = 128 * 4096


def _inversions_by_sort(src: DataFrame, dst: DataFrame) -> int:
    """target_order_violations the slow way, for records whose R runs overlap (MirrorFold cannot
    join them end to end): each identity's first offsets in X and R, then a window per producer
    and partition in R's order, comparing each record with the highest source offset before it."""
    x = src.groupBy(*ID).agg(F.min("offset").alias("src_off"), F.first("partition").alias("partition"))
    r = dst.groupBy(*ID).agg(F.min("offset").alias("dst_off"))
    order = Window.partitionBy("producer_id", "partition").orderBy("dst_off")
    before = order.rowsBetween(Window.unboundedPreceding, -1)
    return (
        x.join(r, ID)
        .withColumn("max_before", F.max("src_off").over(before))
        .filter(F.col("src_off") < F.col("max_before"))
        .count()
    )


def check_flow(
    spark,
    record: RecordReader,
    name: str,
    flow: dict,
    topic: str,
    P: DataFrame,
    faults: list[dict],
    failovers: list[dict],
    source_dcs: list[str],
    caught_up_ms: int | None = None,
    rows: int = 0,
    C: DataFrame | None = None,
    P_plain: DataFrame | None = None,
    C_plain: DataFrame | None = None,
) -> dict:
    """One flow's counts (module doc), folded per identity in the JVM (spark/jvm/MirrorFold.java):
    one shuffle of the acknowledgements, X and R by blocks of a producer's seqs, no join. Counts
    and the lag's percentiles are exact (the lags are whole milliseconds). `rows`: about how many
    records the drill produced, which sizes the fold's tasks. With `C` (the consumed rows), the
    flow's first failover into R is folded in too: its counts come back under `failover`. `P_plain`,
    `C_plain`: the produced and consumed ledgers as read, where they are plain Parquet."""
    remote = flow["remote_topic_prefix"] + topic
    (src, src_plain), (dst, dst_plain) = (_audit(spark, record, flow[end]) for end in ("source", "target"))
    src, dst = src.filter(F.col("topic") == topic), dst.filter(F.col("topic") == remote)
    acked = P.filter((F.col("status") == "ok") & F.col("dc").isin(*source_dcs) & F.col("ack_ms").isNotNull())
    start = faults[0]["start_ms"] if faults else None
    end = max((f.get("end_ms") or 0) for f in faults) if faults else None
    at = _instant(faults, failovers, flow, source_dcs)
    steady_end = start - STEADY_MARGIN_MS if start else None
    steady_start = max(steady_end - STEADY_WINDOW_MS, caught_up_ms or 0) if start else None
    partitions = max(int(spark.conf.get("spark.sql.shuffle.partitions")), -(-rows // ROWS_PER_TASK))
    fo = (
        next(
            (f for f in failovers if (f["from"], f["to"], f.get("topic")) == (flow["source"], flow["target"], remote)),
            None,
        )
        if C is not None
        else None
    )
    sides = [
        packed_side(acked, P_plain, "acked", "ack_ms", {"status": ["ok"], "dc": list(source_dcs)}, partitions),
        packed_side(src, src_plain, "source", "timestamp_ms", {"topic": [topic]}, partitions),
        packed_side(dst, dst_plain, "target", "timestamp_ms", {"topic": [remote]}, partitions),
    ]
    reached, consumed = None, consumed_sides(C_plain, fo, partitions) if fo is not None else None
    if consumed is not None:
        sides.append(consumed.chunks())
    elif fo is not None:
        before, after, reached = _failover_rows(C, fo)
        group = {"group": [fo["group"]]}
        sides.append(
            packed_side(before, C_plain, "consumed_before", None, {**group, "cluster": [None, fo["from"]]}, partitions)
        )
        sides.append(packed_side(after, C_plain, "consumed_after", None, {**group, "cluster": [fo["to"]]}, partitions))
    r = fold_sides(
        spark,
        sides,
        {"start": start, "end": end, "at": at, "steady_from": steady_start, "steady_to": steady_end},
        reached,
        partitions,
        consumed,
    )
    c = r["counts"]
    inversions = r["inversions"] if r["inversions"] is not None else _inversions_by_sort(src, dst)
    stranded_by = {k: c[k] for k in ("before", "during") if c[k]}
    if c["not_mirrored"] - sum(stranded_by.values()):
        stranded_by["after"] = c["not_mirrored"] - sum(stranded_by.values())
    rpo = {"at_ms": at, "records": None, "seconds": None}
    if at is not None:
        rpo = {
            "at_ms": at,
            "records": c["rpo_n"],
            "seconds": round((c["last_ack"] - c["rpo_oldest"]) / 1000, 3) if c["rpo_n"] else 0.0,
        }
    return {
        "source": flow["source"],
        "target": flow["target"],
        "topic": topic,
        "remote_topic": remote,
        "counts": {
            "acked": c["acked"],
            "mirrored": c["mirrored"],
            "not_mirrored": c["not_mirrored"],
            "not_mirrored_by_phase": dict(sorted(stranded_by.items())),
            "acked_absent_from_source": c["absent"],
            "replication_duplicates": c["dups"],
            "target_phantoms": c["phantoms"],
            "target_order_violations": int(inversions),
        },
        "lag_ms": r["lag"],
        "steady_lag_ms": {**r["steady"], "from_ms": steady_start, "to_ms": steady_end},
        "rpo": rpo,
        "catch_up_ms": None if c["caught"] is None else max(0, c["caught"] - end),
        "lag_timeline": r["timeline"],  # per second of the source's append time
        "failover": None if fo is None else _failover_summary(fo, r["failover"]),
    }


def _origins(spark, record: RecordReader, cluster: str) -> DataFrame | None:
    """topic and origin of each row of the cluster's audit (origin: the `dcdrill-origin` header the
    audit read; null in a record written before headers carried it). None: no audit file."""
    _, info = load(spark, record, "audit", cluster)
    if info["empty"]:
        return None
    if info["format"] == "parquet":
        df = info["plain"] if info["plain"] is not None else spark.read.parquet(*info["files"])  # every column
        if "origin" not in df.columns:
            df = df.withColumn("origin", F.lit(None).cast("string"))
    else:
        df = spark.read.schema("topic string, producer_id string, origin string").json(info["files"])
    return df.filter(F.col("producer_id").isNotNull()).select("topic", "origin")


def mirror_loops(spark, record: RecordReader, clusters: list[str], topic: str | None) -> dict[str, int]:
    """Rows in a cluster's audit that started in that very cluster yet sit in a copy: by the copy's
    name (`<cluster>.…` or `….<cluster>.…`), or by the origin header MM2 copied with them (any
    topic but the cluster's own drill topic). A plain Parquet audit is read batch by batch
    (MirrorBatches.loops), any other in SQL (loops_in_sql, the reference); one job each."""
    out, in_sql, batchwise = dict.fromkeys(clusters, 0), [], None
    for i, c in enumerate(clusters):
        _, info = load(spark, record, "audit", c)
        rows = None
        if info["plain"] is not None and spark.conf.get(COLUMNAR_SCAN, "true").lower() != "false":
            pruned = info["plain"].filter(_loop_test(c, topic, "origin" in info["plain"].columns))
            rows = spark._jvm.dcdrill.MirrorBatches.loops(pruned._jdf, i, c, topic)
        if rows is None:
            in_sql.append(c)
        else:
            batchwise = rows if batchwise is None else batchwise.union(rows)
    if batchwise is not None:
        for index, n in batchwise.collect():
            out[clusters[index]] += n
    out.update(loops_in_sql(spark, record, in_sql, topic))
    return out


def _loop_test(cluster: str, topic: str | None, origins: bool):
    """mirror_loops' test of an audit row, as a filter. No coalesce around the origin's test: a
    null there drops the row all the same, and bare comparisons are pushed down to Parquet,
    whose row-group statistics and dictionaries then skip what holds no loop (usually all of
    it) unread."""
    named = F.col("topic").startswith(f"{cluster}.") | F.col("topic").contains(f".{cluster}.")
    return named | ((F.col("origin") == cluster) & (F.col("topic") != F.lit(topic))) if origins else named


def loops_in_sql(spark, record: RecordReader, clusters: list[str], topic: str | None) -> dict[str, int]:
    """mirror_loops' counts for `clusters` in Spark SQL."""
    out, loops = dict.fromkeys(clusters, 0), None
    for c in clusters:
        a = _origins(spark, record, c)
        if a is None:
            continue
        a = a.filter(_loop_test(c, topic, True)).select(F.lit(c).alias("cluster"))
        loops = a if loops is None else loops.unionByName(a)
    if loops is not None:  # one job for every cluster
        out.update({r["cluster"]: r["count"] for r in loops.groupBy("cluster").count().collect()})
    return out


def _failover_rows(C: DataFrame, fo: dict) -> tuple[DataFrame, DataFrame, dict[int, int]]:
    """The group's consumed rows before the failover (on its source; a stretched record leaves
    their cluster null) and after it (on its target), and the highest offset of the copy it
    reached per partition."""
    group = C.filter(F.col("group") == fo["group"])
    after = group.filter(F.col("cluster") == fo["to"])
    reached = {
        int(r["partition"]): int(r["reached"])
        for r in after.groupBy("partition").agg(F.max("offset").alias("reached")).collect()
    }
    return group.filter(F.col("cluster").isNull() | (F.col("cluster") == fo["from"])), after, reached


def _failover_summary(fo: dict, counts: dict) -> dict:
    first = {int(p): o for p, o in (fo.get("offsets") or {}).items()}
    return {
        "group": fo["group"],
        "from": fo["from"],
        "to": fo["to"],
        "at_ms": fo["at_ms"],
        "topic": fo["topic"],
        "translated_offsets": first,
        "processed_before": counts["processed_before"],
        "processed_after": counts["processed_after"],
        "failover_redelivered": counts["redelivered"],
        "failover_skipped": counts["skipped"],
        "unread_at_end": counts["unread"],
    }


def check_failover(spark, record: RecordReader, fo: dict, C: DataFrame) -> dict:
    """One consumer-group failover that no flow's fold took (a second one into the same copy):
    the same counts as MirrorFold's, each identity's rows (consumed before, consumed after, in
    the copy below where the group got to) as bits of one flag in one aggregation."""
    BEFORE, AFTER, BELOW = 1, 2, 4
    before_rows, after_rows, reached = _failover_rows(C, fo)
    copy = _audit(spark, record, fo["to"])[0].filter(F.col("topic") == fo["topic"])
    limit = F.lit(None).cast("long")
    for p, o in reached.items():  # a few partitions: a CASE, not a join
        limit = F.when(F.col("partition") == p, F.lit(o)).otherwise(limit)
    copy = copy.withColumn("reached", limit)
    tagged = (
        before_rows.select(*ID, F.lit(BEFORE).alias("bit"))
        .unionByName(after_rows.select(*ID, F.lit(AFTER).alias("bit")))
        .unionByName(copy.filter(F.col("offset") <= F.col("reached")).select(*ID, F.lit(BELOW).alias("bit")))
    )
    f = F.col("f")

    def has(bits: int):
        return F.sum((f.bitwiseAND(bits) == bits).cast("long"))

    r = (
        tagged.groupBy(F.xxhash64("producer_id").alias("idh"), "seq")
        .agg(F.bit_or("bit").alias("f"))
        .agg(
            has(BEFORE).alias("processed_before"),
            has(AFTER).alias("processed_after"),
            has(BEFORE | AFTER).alias("redelivered"),
            F.sum(((f.bitwiseAND(BELOW) == BELOW) & (f.bitwiseAND(BEFORE | AFTER) == 0)).cast("long")).alias("skipped"),
        )
        .first()
        .asDict()
    )
    counts = {k: int(v or 0) for k, v in r.items()}
    counts["unread"] = copy.filter(F.col("reached").isNull() | (F.col("offset") > F.col("reached"))).count()
    return _failover_summary(fo, counts)


def mm2_events(events: list[dict] | None, flow: str, since_ms: int | None) -> dict | None:
    """The flow's MM2 node's restarts and rebalances from `since_ms` on (None: every event)."""
    if events is None:
        return None
    own = [e for e in events if flow in e["flows"] and (since_ms is None or e["at_ms"] >= since_ms)]
    return {
        "restarts": sum(e["event"] == "start" for e in own),
        "rebalances": sum(e["event"] == "rebalance" for e in own),
    }


def check(
    spark,
    record: RecordReader,
    topology: dict,
    faults: list[dict],
    failovers: list[dict],
    waits: list[dict] = (),
    events: list[dict] | None = None,
    rows: int = 0,
    topic: str | None = None,
) -> dict:
    """summary.json's `mirrors`, `mirror_loops` and `failovers` for a replicated record. `topic`:
    the drill topic when the caller knows it (else the produced ledger's first row names it)."""
    start = faults[0]["start_ms"] if faults else None
    P, P_info = load(spark, record, "produced")  # every cluster's producers (verify.py's P: the home cluster's)
    if topic is None:
        topic_row = P.select("topic").filter(F.col("topic").isNotNull()).limit(1).collect()
        topic = topic_row[0][0] if topic_row else None
    clusters = topology["clusters"]
    C, C_plain = _consumed(spark, record) if failovers else (None, None)
    mirrors, folded = {}, {}
    # The loops' job is mostly waiting (planning, row groups skipped unread): it runs beside the folds.
    pool = concurrent.futures.ThreadPoolExecutor(1)
    loops = pool.submit(mirror_loops, spark, record, sorted(clusters), topic)
    pool.shutdown(wait=False)
    for name, flow in sorted(topology["mirrors"].items()):
        dcs = [dc["name"] for dc in clusters[flow["source"]]["datacenters"]]
        caught = [w["caught_up_ms"] for w in waits if w["flow"] == name and start and w["caught_up_ms"] < start]
        mirrors[name] = check_flow(
            spark,
            record,
            name,
            flow,
            topic,
            P,
            faults,
            failovers,
            dcs,
            caught[-1] if caught else None,
            rows,
            C,
            P_info["plain"],
            C_plain,
        )
        mirrors[name]["mm2"] = mm2_events(events, name, start)
        if (fo := mirrors[name].pop("failover")) is not None:
            folded[(fo["group"], fo["at_ms"])] = fo
    return {
        "mirrors": mirrors,
        "mirror_loops": loops.result(),
        "failovers": [
            folded.get((fo["group"], fo["at_ms"])) or check_failover(spark, record, fo, C) for fo in failovers
        ],
    }
