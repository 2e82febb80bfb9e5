"""The counts, as a pure function of the drill record's DataFrames.

Built for records where almost every record is clean:
  1. screen and 2. identity pass (spark/identities.py): bitmaps per 64 seqs of a producer find
     the few buckets with something to report, and in them the seqs; only their rows are
     aggregated per identity.
  3. single-ledger folds, fed by the same scan of the ledgers: the producer pass (counts per
     fine split, acknowledgement bitmaps for exact gaps and recovery, latency histogram for exact
     percentiles: no join) and reordering (the audit checked in log order as it streams, or
     sorted per partition and producer by offset when it is not in log order).
  4. divergent positions and offset mismatches of records written 3+ times: only when the
     identity pass found candidates, and only their rows, are read again.
Spark SQL reads and narrows the ledgers; the folds are JVM loops (spark/jvm/, see identities.py).
Position checks rely on what the audit guarantees: one audit row per (topic, partition, offset).
Hashes (xxhash64) stand for producer ids and positions; a collision is a 2^-64 event.
spark/rollup.py turns the small tables into the summary. RECORD.md defines every count;
tests/spark/test_checker.py pins them on records with known anomalies.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from dcdrill.spark import identities, rollup
from dcdrill.spark.identities import GROUP_KEY, Identities, partition_key
from dcdrill.spark.ledgers import bad_row

COUNT_NAMES = (
    "produced",
    "acked",
    "failed",
    "indeterminate",
    "acked_lost",
    "acked_unseen",
    "failed_present",
    "indeterminate_present",
    "duplicates_in_log",
    "duplicates_delivered",
    "phantoms",
    "ack_offset_mismatch",
    "divergent_offsets",
    "reordered",
    "max_ack_gap_ms",
    "torn_lines",
)


# The fine grain carries the DC and topic names themselves, and dt (dc_topic()) and tp
# (partition_key()), to meet the identity pass's anomalies (which carry hashes) and the
# reordering counts. Phases: 0 before the first fault, 2i+1 during fault i, 2i+2 after it, by
# send time (ProducerPass.java and Identity.java compute them from fault_bounds()).
FINE = ("phase", "dc", "topic", "partition", "send_sec")


def phase_labels(faults: list[dict]) -> list[str]:
    if not faults:
        return ["no fault"]
    names = [f"{f.get('fault')} {f.get('target')}" for f in faults]
    return ["before"] + [x for n in names for x in (f"during {n}", f"after {n}")]


def producer_pass(scanned) -> dict[str, list[dict]]:
    """Small tables from the produced rows: counts per fine split (FINE), each partition's
    acknowledgement timeline (every distinct ack millisecond, as bitmap words: rollup.AckTimeline),
    acks per second, the latency histogram per (phase, second) and each producer's rows and seq
    range (seqs, for the dense-seq check). Folded per task as the scan
    streams the rows, merged on the driver (spark/jvm/ProducerPass.java); no shuffle, no join:
    anomalies come from the identity pass."""
    tables: dict[str, list[dict]] = {
        "fine": [],
        "timelines": [],
        "acks": [],
        "latency": [],
        "group_latency": [],
        "seqs": [],
    }
    for r in map(json.loads, scanned.producerTables().splitlines()):
        kind = (
            "latency"
            if "latency" in r
            else "group_latency"
            if "group_latency_ms" in r
            else "timelines"
            if "words" in r
            else "acks"
            if "ack_sec" in r
            else "seqs"
            if "producer_idh" in r
            else "fine"
        )
        tables[kind].append(r)
    return tables


def reordering(scanned, A: DataFrame) -> dict[int, int]:
    """Per partition (as partition_key()): audit rows whose seq is below their producer's largest
    seq at a lower offset. An audit in log order (as dcdrill writes it) is checked as the scan
    streams it (spark/jvm/Reordering.java); the rows of any (topic, partition, producer) that are
    in another order are sorted, by offset, and only those."""
    streamed = scanned.reordering()
    counts = {int(k): int(v) for k, v in streamed.reordered().items()}
    unordered = list(streamed.unordered())
    if unordered:
        groups = F.broadcast(A.sparkSession.createDataFrame([(g,) for g in unordered], "g long"))
        a = (
            A.filter(~bad_row("audit") & F.col("seq").isNotNull())
            .select(F.expr(GROUP_KEY).alias("g"), partition_key().alias("tp"), "offset", "seq")
            .join(groups, "g")
        )
        w = Window.partitionBy("g").orderBy("offset").rowsBetween(Window.unboundedPreceding, -1)
        # Filter, then count: almost no row is reordered, so the aggregation sees almost nothing.
        for r in (
            a.select("tp", "seq", F.max("seq").over(w).alias("prev_max"))
            .filter(F.col("seq") < F.col("prev_max"))
            .groupBy("tp")
            .count()
            .collect()
        ):
            counts[r["tp"]] = counts.get(r["tp"], 0) + r["count"]
    return {k: v for k, v in counts.items() if v}


def _rows_of(df: DataFrame, ledger: str, cand: DataFrame, cols: list[str]) -> DataFrame:
    return (
        df.filter(~bad_row(ledger))
        .withColumn("idh", F.xxhash64("producer_id"))
        .join(cand, ["idh", "seq"])
        .select(*cols)
    )


def _candidates(ident: Identities, flag: str) -> DataFrame:
    return F.broadcast(ident.anomalies.filter(F.col(flag) > 0).select("idh", "seq"))


def divergent_positions(A: DataFrame, C: DataFrame, ident: Identities) -> list[dict]:
    """Distinct consumed positions where the audit holds no row of the record consumed there:
    only the candidates' rows are read again (normally none)."""
    if not ident.totals["divergent_candidates"]:
        return []
    cand, cols = _candidates(ident, "divergent_candidates"), ["idh", "seq", "topic", "partition", "offset"]
    seen = _rows_of(C, "consumed", cand, cols).join(_rows_of(A, "audit", cand, cols), cols, "left_anti")
    return [
        r.asDict()
        for r in seen.groupBy("topic", "partition").agg(F.countDistinct("offset").alias("divergent_offsets")).collect()
    ]


def more_offset_mismatches(P: DataFrame, A: DataFrame, ident: Identities) -> int:
    """Acknowledged records written to the log three times or more: is one copy at the
    acknowledged offset? Only those records are read again."""
    if not ident.totals["mismatch_candidates"]:
        return 0
    cand, cols = _candidates(ident, "mismatch_candidates"), ["idh", "seq", "topic", "partition", "offset"]
    acked = _rows_of(P.filter(F.col("status") == "ok"), "produced", cand, cols)
    return acked.join(_rows_of(A, "audit", cand, cols), cols, "left_anti").count()


def examples(
    P: DataFrame, A: DataFrame, ident: Identities, plain: dict | None = None, where: dict | None = None
) -> list[dict]:
    """The first lost or duplicated records (the identity pass's examples, earliest send first)
    named as the report lists them: producer, seq, where it was acknowledged (topic, partition,
    offset) and the offsets the log holds it at. One more read of the produced and audit ledgers,
    which looks at a row's name only when its seq is an example's. `plain`: the ledgers as read,
    where they are plain Parquet (ledgers.load); those are read batch by batch in the JVM
    (Columnar.find, cheaper cold than the same lookup planned in SQL), keeping the rows their
    `where` (ledgers.load's) keeps."""
    if not ident.examples:
        return []
    spark = P.sparkSession
    found, batchwise = [], None
    for ledger, df in (("produced", P), ("audit", A)):
        if (
            rows := _batchwise(
                spark, ledger, (plain or {}).get(ledger), ident.examples, (where or {}).get(ledger) or {}
            )
        ) is not None:
            batchwise = rows if batchwise is None else batchwise.union(rows)  # one job for both
        else:
            found += [{**r, "ledger": ledger} for r in _holding(spark, ledger, df, ident.examples)]
    if batchwise is not None:
        found += [json.loads(line) for text in batchwise.collect() for line in text.splitlines()]
    produced = {(r["idh"], r["seq"]): r for r in found if r["ledger"] == "produced"}
    logged: dict[tuple, list] = {}
    for r in found:
        if r["ledger"] == "audit":
            logged.setdefault((r["idh"], r["seq"]), []).append(r)
    out = []
    for e in ident.examples:
        key = (e["idh"], e["seq"])
        p, log = produced.get(key), sorted(logged.get(key, []), key=lambda r: (r["partition"], r["offset"]))
        named = p or (log[0] if log else None)
        out.append(
            {
                "kind": e["kind"],
                "producer": named["producer_id"] if named else None,
                "seq": e["seq"],
                "topic": named["topic"] if named else None,
                "partition": p["partition"] if p else e["partition"],
                "acked_offset": p["offset"] if p else None,
                "send_ms": e["send_ms"],
                "log_offsets": [f"{r['partition']}:{r['offset']}" for r in log],
            }
        )
    return out


def _batchwise(spark, ledger: str, plain: DataFrame | None, wanted: list[dict], where: dict):
    """Columnar.find on a plain ledger: the JVM's lazy RDD of its rows that pass `where` and hold
    one of the `wanted` identities, JSON lines tagged with the ledger; None when the ledger is not
    plain."""
    if (columns := identities.batch_columns(plain, ledger, where)) is None:
        return None
    pairs = struct.pack(f">{2 * len(wanted)}q", *(v for e in wanted for v in (e["idh"], e["seq"])))
    return spark._jvm.dcdrill.Columnar.find(columns.filter(_near(ledger, wanted))._jdf, ledger, pairs, where)


def _near(ledger: str, wanted: list[dict]):
    """Bounds every row holding one of `wanted` is within: its seq's (and a produced row's send
    time's, when every example has one). Parquet skips the row groups outside them."""
    seqs = [e["seq"] for e in wanted]
    near = F.col("seq").between(min(seqs), max(seqs))
    sends = [e["send_ms"] for e in wanted if e["send_ms"] is not None]
    if ledger == "produced" and len(sends) == len(wanted):
        near &= F.col("send_ms").between(min(sends), max(sends))
    return near


def _holding(spark, ledger: str, df: DataFrame, wanted: list[dict]) -> list[dict]:
    """The same in SQL, for any ledger: {idh, seq, producer_id, topic, partition, offset} rows, filtered
    on the seqs (and, for produced rows, the send times) before any name is hashed."""
    keys = F.broadcast(spark.createDataFrame([(e["idh"], e["seq"]) for e in wanted], "idh long, seq long"))
    rows = df.filter(
        F.col("seq").isin(sorted({e["seq"] for e in wanted})) & F.col("producer_id").isNotNull() & _near(ledger, wanted)
    )
    return [
        r.asDict()
        for r in rows.select(
            F.xxhash64("producer_id").alias("idh"), "seq", "producer_id", "topic", "partition", "offset"
        )
        .join(keys, ["idh", "seq"])
        .collect()
    ]


@dataclass
class Ledgerwise:
    """What the checker computes from one ledger alone, independent of the identity passes."""

    tables: dict[str, list[dict]]  # producer_pass()
    reordered: dict[int, int]  # reordering()


def ledgerwise(scanned, A: DataFrame) -> Ledgerwise:
    return Ledgerwise(producer_pass(scanned), reordering(scanned, A))


def run(
    P: DataFrame, A: DataFrame, C: DataFrame, ident: Identities, faults: list[dict], lw: Ledgerwise, torn_lines: int = 0
) -> dict:
    """The summary's data sections (see spark/verify.py for the rest)."""
    t = ident.totals
    tables = lw.tables
    labels = phase_labels(faults)
    dc_topics = {r["dt"]: (r["dc"], r["topic"]) for r in tables["fine"]}
    tp_names = {r["tp"]: (r["topic"], r["partition"]) for r in tables["fine"]}
    for r in ident.by_split:
        r["dc"], r["topic"] = dc_topics[r["dt"]]
    fine = tables["fine"] + ident.by_split
    for r in fine + tables["latency"] + tables["group_latency"]:
        r["phase"] = labels[r["phase"]]
    part_rows: dict[tuple, dict] = {}
    for k, n in lw.reordered.items():
        if n:
            part_rows.setdefault(tp_names.get(k, ("?", k)), {})["reordered"] = n
    for r in divergent_positions(A, C, ident):
        part_rows.setdefault((r["topic"], r["partition"]), {})["divergent_offsets"] = r["divergent_offsets"]
    mismatches = t["ack_offset_mismatch"] + more_offset_mismatches(P, A, ident)

    timelines = {
        (t["topic"], t["partition"]): rollup.AckTimeline(list(zip(t["words"], t["masks"]))) for t in tables["timelines"]
    }
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
        stats.update(
            fault=f.get("fault"),
            target=f.get("target"),
            start_ms=f["start_ms"],
            end_ms=f.get("end_ms"),
            isr_at_start=f.get("isr_at_start"),
        )

    # {(columns, their values): {latency_ms: records}}, for each split the summary gives latency in
    hist: dict[tuple, dict[int, int]] = {}

    def count(columns: tuple, r: dict, latency_ms: int, n: int) -> None:
        h = hist.setdefault((columns, tuple(r[c] for c in columns)), {})
        h[latency_ms] = h.get(latency_ms, 0) + n

    for r in tables["latency"]:
        for columns in (("phase",), ("send_sec",)):
            count(columns, r, r["latency"], r["produced"])
    for r in tables["group_latency"]:  # per (phase, DC and topic, partition): the DC and partition splits
        for columns in (("dc",), ("dc", "phase"), ("topic", "partition")):
            count(columns, r, r["group_latency_ms"], r["acked"])

    def rolled(columns: tuple) -> list[dict]:
        """The fine rows summed up to `columns`, with their latency percentiles."""
        rows = rollup.roll(fine, columns)
        for g in rows:
            hist_key = (columns, tuple(g[c] for c in columns))
            g["latency_p50_ms"], g["latency_p99_ms"] = rollup.percentiles(hist.get(hist_key, {}))
        return rows

    order = {label: i for i, label in enumerate(labels)}
    return {
        "counts": counts,
        "phases": sorted(_table(rolled(("phase",)), ("phase",)), key=lambda r: order[r["phase"]]),
        "by_dc": sorted(_table(rolled(("dc",)), ("dc",)), key=lambda r: str(r["dc"])),
        # Whether the surviving DC's producers kept writing during a DC's loss, and at what latency
        "by_dc_phase": sorted(
            _table(rolled(("dc", "phase")), ("dc", "phase")), key=lambda r: (str(r["dc"]), order[r["phase"]])
        ),
        "by_partition": [
            {
                **_table([r], ("topic", "partition"))[0],
                **{
                    k: int(part_rows.get((r["topic"], r["partition"]), {}).get(k) or 0)
                    for k in ("max_ack_gap_ms", "reordered", "divergent_offsets")
                },
            }
            for r in sorted(rolled(("topic", "partition")), key=lambda r: (str(r["topic"]), r["partition"]))
        ],
        "faults": fault_stats,
        "data_loss_window": _loss_window(total, faults),
        "timeline": {
            "send": sorted(
                (
                    {
                        "sec": r["send_sec"],
                        **{k: r[k] for k in ("acked", "failed", "indeterminate", "acked_lost", "duplicates_in_log")},
                        "latency_p50_ms": r["latency_p50_ms"],
                        "latency_p99_ms": r["latency_p99_ms"],
                    }
                    for r in rolled(("send_sec",))
                ),
                key=lambda r: r["sec"],
            ),
            "acks": [
                {"sec": r["ack_sec"], "acked": r["acked"]} for r in sorted(tables["acks"], key=lambda r: r["ack_sec"])
            ],
        },
    }


def _table(rows, keys):
    keep = rollup.ADDITIVE + ("latency_p50_ms", "latency_p99_ms")
    return [{**{k: r[k] for k in keys}, **{k: r.get(k) for k in keep}} for r in rows]


def _loss_window(total: dict, faults: list[dict]) -> dict | None:
    first, last = total.get("lost_first_send_ms"), total.get("lost_last_send_ms")
    if first is None:
        return None
    anchor = faults[0]["start_ms"] if faults else None
    return {
        "first_lost_send_ms": first,
        "last_lost_send_ms": last,
        "span_ms": last - first,
        "first_relative_to_fault_ms": first - anchor if anchor else None,
        "last_relative_to_fault_ms": last - anchor if anchor else None,
    }
