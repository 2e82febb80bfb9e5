"""The verifier's memory plan (spark/memory.py): the heap and shuffle width follow the record and
the machine; a record that does not fit in the heap it was given exits 2 naming the setting."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dcdrill.spark import memory
from dcdrill.spark.memory import GIB
from tests import records

ROOT = Path(__file__).resolve().parents[2]


def record_of(run: Path, produced_bytes: int, audit_bytes: int, suffix=".parquet") -> str:
    for kind, size in (("produced", produced_bytes), ("audit", audit_bytes)):
        (run / kind).mkdir(parents=True)
        with open(run / kind / f"part{suffix}", "wb") as f:
            f.truncate(size)  # sparse: only the size is read
    return str(run)


def test_the_heap_grows_with_the_record_within_the_machines_share(tmp_path):
    small = memory.plan([record_of(tmp_path / "small", 10 << 20, 10 << 20)], cores=2, available=20 * GIB)
    assert small.heap == memory.FLOOR and small.partitions == 4
    # 500 MB of Parquet each: up to 100M rows each, 8 GB packed; 18 GB wanted, 12 GB the share of 20.
    big = memory.plan([record_of(tmp_path / "big", 500_000_000, 500_000_000)], cores=2, available=20 * GIB)
    assert big.cache == 100_000_000 * 48 + 100_000_000 * 32
    assert big.wanted == 2 * GIB + 2 * big.cache
    assert big.heap == int(20 * GIB * memory.MACHINE_SHARE)
    assert big.partitions == -(-big.cache // memory.CACHE_PER_REDUCER) > 4
    # JSON Lines take more bytes a row; the largest of several records decides.
    both = memory.plan(
        [str(tmp_path / "small"), record_of(tmp_path / "json", 800_000_000, 0, ".jsonl")], cores=2, available=20 * GIB
    )
    assert both.cache == 800_000_000 // 80 * 48 > small.cache
    # A small machine: the share, below the usual floor.
    tight = memory.plan([str(tmp_path / "small")], cores=2, available=2 * GIB)
    assert tight.heap == int(2 * GIB * memory.MACHINE_SHARE) and tight.heap_setting == "1228m"
    # No local folder (s3a://): nothing known, the floor.
    assert memory.plan(["s3a://bucket/run"], cores=8, available=64 * GIB).heap == memory.FLOOR


def test_a_record_too_big_for_a_tiny_heap_exits_2_naming_the_setting(tmp_path):
    """12M records in one task (row groups of 1M rows) against a 460 MB heap, just above Spark's
    own minimum: the JVM runs out of memory, and the user reads which setting to raise."""
    run = tmp_path / "run"
    _bench().generate(run, 12_000_000, "parquet", "few")
    scratch = tmp_path / "scratch"  # the command's temporary files go here (TMPDIR)
    scratch.mkdir()
    env = {**os.environ, "DCDRILL_SPARK_DRIVER_MEMORY": "460m", "TMPDIR": str(scratch)}

    def spark_dirs():
        return {p.name for p in Path("/tmp").glob("*") if p.name.startswith(("blockmgr-", "spark-"))}

    before = spark_dirs()
    done = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "verify", str(run), "--quiet"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr[-3000:]
    # The JVM ended without its shutdown hooks: Spark's scratch space is removed all the same.
    assert list(scratch.iterdir()) == [] and spark_dirs() <= before
    assert "does not fit in the verifier's memory (460m)" in done.stderr
    assert "DCDRILL_SPARK_DRIVER_MEMORY" in done.stderr and "spark.driver.memory" in done.stderr
    assert "Traceback" not in done.stderr and "\tat " not in done.stderr  # one line, no stack


def _bench():
    spec = importlib.util.spec_from_file_location("bench", ROOT / "tests/benchmarks/verifier_vs_duckdb.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def _fold_record(run: Path) -> Path:
    """300,000 acknowledged records of one producer in one task, the odd seqs missing from the log."""
    import duckdb

    for d in ("produced", "audit", "consumed"):
        (run / d).mkdir(parents=True)
    (run / "topology.json").write_text(json.dumps(records.topology()))
    (run / "faults.jsonl").write_text("")
    con = duckdb.connect()
    con.execute(f"""COPY (SELECT 'p1' AS producer_id, i::BIGINT AS seq, 't' AS topic, 0 AS partition,
                   NULL::VARCHAR AS key,
                   1000 + i AS send_ms, 'ok' AS status, 1005 + i AS ack_ms, i::BIGINT AS "offset",
                   NULL::VARCHAR AS error, 'dc-a' AS dc FROM range(300000) r(i)) TO '{run}/produced/p.parquet'""")
    con.execute(f"""COPY (SELECT 't' AS topic, 0 AS partition, i::BIGINT AS "offset", 'p1' AS producer_id,
                   i::BIGINT AS seq, 1000 + i AS timestamp_ms FROM range(300000) r(i) WHERE i % 2 = 0)
                   TO '{run}/audit/a.parquet'""")
    con.execute(f"""COPY (SELECT 'c1' AS consumer_id, 'g' AS "group", topic, partition, "offset", producer_id, seq,
                   timestamp_ms AS consume_ms, 'dc-b' AS dc FROM '{run}/audit/a.parquet')
                   TO '{run}/consumed/c.parquet'""")
    return run


@pytest.fixture(scope="module")
def verified(tmp_path_factory) -> dict[str, tuple[dict, dict | None]]:
    """The records the memory plan must hold for, verified in one `dcdrill verify` (one Spark
    session, as a user re-verifying a folder would): by name, the counts and DuckDB's."""
    bench, tmp = _bench(), tmp_path_factory.mktemp("memory")
    for shape, n in (("few", 1_500_000), ("many", 1_500_000), ("drill-5pct", 400_000)):
        bench.generate(tmp / shape, n, "parquet", shape)
    runs = [tmp / "few", tmp / "many", tmp / "drill-5pct", _fold_record(tmp / "fold")]
    done = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "verify", *map(str, runs), "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode in (0, 1), done.stderr[-3000:]
    return {
        run.name: (
            json.loads((run / "report" / "summary.json").read_text())["counts"],
            None if run.name == "fold" else bench.duck(run, "parquet")[1],
        )
        for run in runs
    }


@pytest.mark.parametrize("shape", ["few", "many"])
def test_few_huge_and_many_small_producers_count_as_duckdb_does(verified, shape):
    """The two shapes the memory plan must hold for, on the default plan: 16 producers with row
    groups of 1M rows, and 4096 producers with small row groups."""
    counts, expected = verified[shape]
    assert expected["acked_lost"] > 0 and expected["phantoms"] > 0
    assert {k: counts[k] for k in expected} == expected


def test_a_drill_shaped_record_with_5_percent_of_each_anomaly_counts_as_duckdb_does(verified):
    """Issue 71's heaviest shape: producers interleaved over the partitions, 5 % of the records
    lost, indeterminate, duplicated, reordered and phantom each, at random positions."""
    counts, expected = verified["drill-5pct"]
    assert min(expected.values()) > 0.04 * 400_000 / 2, expected  # every kind there, at about its rate
    assert {k: counts[k] for k in expected} == expected
    assert counts["reordered"] > 0.02 * 400_000 and counts["indeterminate"] > 0.02 * 400_000, counts


def test_a_task_with_more_anomalies_than_its_fold_holds_hands_them_on_in_batches(verified):
    """300,000 acknowledged records of one producer in one task, the odd seqs missing from the log:
    150,000 identities to fold, more than Identity.FOLD_LIMIT (131,072), so the task hands on two
    batches and the reducers merge them; every count stays exact."""
    counts, _ = verified["fold"]
    assert counts["acked_lost"] == counts["acked_unseen"] == 150_000
    assert counts["duplicates_in_log"] == counts["phantoms"] == counts["ack_offset_mismatch"] == 0


def test_a_failure_blames_the_jvm_only_when_it_crashed():
    """memory.failure: a JVM that exited 0 was let go once its Spark work was done (a command's
    last record), so an error after that is the error's own; a crash or Spark's OOM exit is not."""

    def ended(code: int) -> subprocess.Popen:
        proc = subprocess.Popen([sys.executable, "-c", f"raise SystemExit({code})"])
        proc.wait()
        return proc

    error = KeyError("lag_ms")
    assert memory.failure(error, "4g", ended(0)) == "cannot be verified: KeyError: 'lag_ms'"
    assert memory.failure(error, "4g", ended(1)).startswith("the verifier's JVM ended (exit 1) while verifying")
    assert memory.failure(error, "4g", ended(52)).startswith("the record does not fit in the verifier's memory (4g)")
