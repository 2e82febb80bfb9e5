"""The scan's two narrowings agree: Parquet ledgers read batch by batch in the JVM
(spark/jvm/Columnar.java) and the SQL narrowing (spark/identities.py narrow_ledger, the
reference) give the same report and count the same bad rows, whatever the row groups and
encodings."""

import json
import shutil

import duckdb
import pytest
from pyspark.sql import types as T

from dcdrill.record import DrillRecord
from dcdrill.spark import identities, ledgers
from tests import records
from tests.records import verified


def to_parquet(spark, run, rows_by_ledger: dict, files: int, dictionary: bool = True) -> None:
    """Each ledger as Parquet files of RECORD.md's types (replacing its JSON Lines): `files` files
    of rows dealt round-robin (a task reads several, so its batches cross several dictionaries, and
    a producer's rows are interleaved), with or without dictionary encoding."""
    for kind, rows in rows_by_ledger.items():
        folder = run / kind
        for old in folder.glob("*.jsonl"):
            old.unlink()
        schema = T.StructType([T.StructField(c, t) for c, t in ledgers.SCHEMAS[kind].items()])
        tmp = run / f"{kind}.tmp"
        spark.createDataFrame([tuple(r.get(c) for c in schema.names) for r in rows], schema).repartition(
            files
        ).write.option("parquet.enable.dictionary", str(dictionary).lower()).parquet(str(tmp))
        folder.mkdir(parents=True, exist_ok=True)
        for i, f in enumerate(sorted(tmp.glob("part-*.parquet"))):
            f.rename(folder / f"part-{i}.parquet")
        shutil.rmtree(tmp)


def encodings(folder) -> list[str]:
    """producer_id's encodings in each row group of a ledger's Parquet files."""
    return [
        e
        for (e,) in duckdb.sql(
            f"SELECT encodings FROM parquet_metadata('{folder}/*.parquet') WHERE path_in_schema = 'producer_id'"
        ).fetchall()
    ]


def read_jsonl(run, kind) -> list[dict]:
    return [
        json.loads(line)
        for f in sorted((run / kind).glob("*.jsonl"))
        for line in f.read_text().splitlines()
        if line.strip() and line.lstrip().startswith("{") and line.endswith("}")
    ]


def both_ways(spark, run) -> tuple[dict, dict]:
    """verify's summary with the batch-wise narrowing, then with the SQL one."""
    out = []
    for batchwise in ("true", "false"):
        spark.conf.set(identities.COLUMNAR_SCAN, batchwise)
        try:
            code, summary = verified(str(run), spark=spark)
        finally:
            spark.conf.unset(identities.COLUMNAR_SCAN)
        summary.pop("verify_seconds")
        out.append((code, summary))
    return out[0], out[1]


def read_batchwise(spark, run, kind) -> bool:
    kernels = spark._jvm.dcdrill
    columns = kernels.Columnar.PRODUCED if kind == "produced" else kernels.Columnar.LOGGED
    plain = ledgers.load(spark, DrillRecord(run), kind)[1]["plain"]
    return plain is not None and kernels.Columnar.rows(plain.select(*columns)._jdf, kind) is not None


@pytest.mark.parametrize("seed,files,dictionary", [(1, 5, True), (2, 3, True), (3, 7, False), (4, 1, True)])
def test_both_narrowings_give_the_same_report(tmp_path, spark, seed, files, dictionary):
    run = records.random_record(tmp_path / "run", seed)
    to_parquet(
        spark, run, {kind: read_jsonl(run, kind) for kind in ("produced", "audit", "consumed")}, files, dictionary
    )
    groups = encodings(run / "produced")
    assert len(groups) == files and all(("DICTIONARY" in e) == dictionary for e in groups), groups
    assert all(read_batchwise(spark, run, kind) for kind in ("produced", "audit", "consumed"))
    batchwise, sql = both_ways(spark, run)
    assert batchwise == sql
    assert batchwise[1]["counts"]["produced"] > 0 and batchwise[1]["examples"] == sql[1]["examples"]


def test_the_anomalies_record_reads_the_same_both_ways(tmp_path, spark):
    run = records.anomalies(tmp_path / "run")
    to_parquet(spark, run, {kind: read_jsonl(run, kind) for kind in ("produced", "audit", "consumed")}, 4)
    batchwise, sql = both_ways(spark, run)
    assert batchwise == sql
    assert batchwise[1]["counts"]["acked_lost"] > 0 and batchwise[1]["examples"]


def test_bad_rows_are_counted_alike_and_rows_without_a_producer_are_not_bad(tmp_path, spark):
    good = [records.p("p1", i, "ok", 0, i, 1000 + i) for i in range(6)]
    bad_p = [
        dict(good[0], producer_id=None),
        dict(good[1], seq=-1),
        dict(good[2], status="maybe"),
        dict(good[3], offset=None),
        dict(records.p("p1", 9, "fail", 0), offset=4),
        dict(good[4], ack_ms=-5),
        dict(good[5], topic=None),
    ]
    produced = [records.p("p1", i, "ok", 0, i, 1000 + i) for i in range(6, 12)] + bad_p
    audit = [records.a(0, i, "p1", i) for i in range(6, 12)] + [records.a(0, 20, None, None)]  # no producer: fine
    audit += [dict(records.a(0, 21, "p1", 6), topic=None), records.a(0, -1, "p1", 7)]
    consumed = [records.c(0, i, "p1", i) for i in range(6, 12)]
    consumed += [dict(records.c(0, 30, "p1", 6), partition=None), records.c(0, 31, "p1", -2)]
    run = records.write(tmp_path / "run", produced, audit, consumed)
    to_parquet(spark, run, {"produced": produced, "audit": audit, "consumed": consumed}, 4)
    totals = []
    for batchwise in (True, False):
        loaded = {kind: ledgers.load(spark, DrillRecord(run), kind) for kind in ("produced", "audit", "consumed")}
        (P, _), (A, _), (C, _) = loaded.values()
        plain = {kind: info["plain"] if batchwise else None for kind, (_, info) in loaded.items()}
        scanned = identities.scan(P, A, C, 4, [], plain)
        try:
            totals.append(identities.screen(scanned).totals)
        finally:
            scanned.release()
    assert totals[0] == totals[1]
    assert (totals[0]["bad_p"], totals[0]["bad_a"], totals[0]["bad_c"]) == (7, 2, 2)
