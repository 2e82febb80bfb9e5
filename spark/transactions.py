"""The transactions' checks (RECORD.md: transactions): each transaction a producer ended, held
against the committed log (the audit, read committed) and what the read-committed consumers were
given. A pure function of the record, as the other counts are:

- `lost_commits`: a transaction its producer was told committed, none of whose records is in the log;
- `torn_transactions`: one told committed with some of its records in the log, not all;
- `unknown_torn`: one whose outcome the producer could not know, with some of its records in the
  log, not all (an unknown outcome must still be all or nothing);
- `aborted_in_log`: records of an aborted transaction in the committed log;
- `aborted_reads`: deliveries to a read-committed consumer of an aborted transaction's records,
  or of an unknown one's absent from the log.

A record without transactions has none of these (the summary's `transactions` is None).
"""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql import types as T

from dcdrill.record.reader import RecordReader

COUNTS = ("lost_commits", "torn_transactions", "unknown_torn", "aborted_in_log", "aborted_reads")
EXAMPLES = 20  # transactions named in the report, per anomaly


def check(spark, record: RecordReader, A, C) -> dict | None:
    """The transactions section of the summary, or None for a record without transactions."""
    txns = record.transactions_ended()
    if not txns:
        return None
    schema = T.StructType(
        [
            T.StructField("producer_id", T.StringType()),
            T.StructField("txn", T.LongType()),
            T.StructField("first_seq", T.LongType()),
            T.StructField("records", T.LongType()),
            T.StructField("outcome", T.StringType()),
        ]
    )
    table = spark.createDataFrame([tuple(t[c.name] for c in schema) for t in txns], schema)
    # One row a transactional record: its transaction and outcome (an equi-join with the readers).
    members = table.select(
        "producer_id",
        "txn",
        "outcome",
        "records",
        F.explode(F.sequence("first_seq", F.col("first_seq") + F.col("records") - 1)).alias("seq"),
    )
    logged = A.select("producer_id", "seq").where(F.col("seq").isNotNull()).distinct().withColumn("in_log", F.lit(1))
    per = (
        members.join(logged, ["producer_id", "seq"], "left")
        .groupBy("producer_id", "txn", "outcome", "records")
        .agg(F.count("in_log").alias("present"))
    )
    rows = per.collect()
    found = {k: [] for k in COUNTS}
    for r in rows:
        partial = 0 < r.present < r.records
        if r.outcome == "committed" and r.present == 0:
            found["lost_commits"].append(r)
        elif r.outcome == "committed" and partial:
            found["torn_transactions"].append(r)
        elif r.outcome == "unknown" and partial:
            found["unknown_torn"].append(r)
        elif r.outcome == "aborted" and r.present:
            found["aborted_in_log"].append(r)
    unseen = per.where((F.col("outcome") == "aborted") | ((F.col("outcome") == "unknown") & (F.col("present") == 0)))
    delivered = (
        C.select("producer_id", "seq")
        .join(members.join(unseen.select("producer_id", "txn"), ["producer_id", "txn"]), ["producer_id", "seq"])
        .groupBy("producer_id", "txn")
        .agg(F.count("*").alias("reads"))
        .collect()
    )
    counts = {k: len(v) for k, v in found.items()}
    counts["aborted_in_log"] = sum(r.present for r in found["aborted_in_log"])
    counts["aborted_reads"] = sum(r.reads for r in delivered)
    outcomes = {o: sum(1 for t in txns if t["outcome"] == o) for o in ("committed", "aborted", "unknown")}
    examples = [
        {"kind": kind, "producer": r.producer_id, "txn": r.txn, "outcome": r.outcome, "records": r.records}
        | {"in_log": r.present}
        for kind in COUNTS[:4]
        for r in sorted(found[kind], key=lambda r: (r.producer_id, r.txn))[:EXAMPLES]
    ] + [
        {"kind": "aborted_reads", "producer": r.producer_id, "txn": r.txn, "reads": r.reads}
        for r in sorted(delivered, key=lambda r: (r.producer_id, r.txn))[:EXAMPLES]
    ]
    return {"transactions": len(txns), "outcomes": outcomes, "counts": counts, "examples": examples}
