"""`dcdrill verify s3a://...`: a drill record in S3, read through hadoop-aws, with moto's S3
server on loopback as the endpoint. The verifier runs as a user runs it: a fresh process."""

import json
import os
import subprocess
import sys
import tempfile

import boto3
import duckdb
import pytest

from dcdrill.spark import java_runtime
from dcdrill.spark.ledgers import REQUIRED, SCHEMAS
from tests import ROOT, records

BUCKET = "drills"


@pytest.fixture(scope="module")
def s3(moto_endpoint):  # moto on loopback (tests/conftest.py)
    endpoint = moto_endpoint
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=BUCKET)
    yield endpoint, client


def _upload(client, run, prefix: str) -> None:
    for path in sorted(run.rglob("*")):
        if path.is_file():
            client.put_object(Bucket=BUCKET, Key=f"{prefix}/{path.relative_to(run)}", Body=path.read_bytes())


def _verify(endpoint: str, uris: list[str], via: str = "dcdrill") -> subprocess.CompletedProcess:
    """`dcdrill verify URI...`, or (`via="spark-submit"`) `spark-submit --master local[3] --jars <the s3a
    jars and the kernel jar> --conf spark.sql.shuffle.partitions=3 dcdrill/verify_command.py URI...`,
    as the README tells a user to run it. Also checks that the command
    returns with its JVM ended: nothing of its process group is still running."""
    conf = {
        "fs.s3a.endpoint": endpoint,
        "fs.s3a.endpoint.region": "us-east-1",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.connection.ssl.enabled": "false",
        "fs.s3a.access.key": "testing",
        "fs.s3a.secret.key": "testing",
        "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
    }
    args = [x for k, v in conf.items() for x in ("--conf", f"spark.hadoop.{k}={v}")]
    # Nothing may look for credentials or a region off this machine (the instance metadata service).
    env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true", "DCDRILL_SPARK_MASTER": "local[2]"}
    if via == "spark-submit":
        venv_bin = os.path.dirname(sys.executable)
        env["PATH"] = f"{venv_bin}:{env['PATH']}"
        command = [
            os.path.join(venv_bin, "spark-submit"),
            "--master",
            "local[3]",
            "--jars",
            ",".join([*java_runtime.s3a_jars(), str(java_runtime.kernel_jar())]),
            "--conf",
            "spark.sql.shuffle.partitions=3",
            *args,
            "dcdrill/verify_command.py",
            *uris,
            "--json",
            "--quiet",
        ]
    else:
        command = [sys.executable, "-m", "dcdrill.cli", "verify", *uris, "--json", "--quiet", *args]
    # Output to files, not pipes: a JVM still running would hold a pipe open and be waited for.
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, text=True, env=env, cwd=ROOT, start_new_session=True)
        proc.wait(timeout=600)
        left = _group_alive(proc.pid)
        out.seek(0), err.seek(0)
        done = subprocess.CompletedProcess(command, proc.returncode, out.read(), err.read())
    assert not left, f"{via} verify returned with processes of its group still running: {left}"
    return done


def _group_alive(pgid: int) -> list[str]:
    if os.name != "posix":
        return []
    ps = subprocess.run(["ps", "-eo", "pgid=,stat=,args="], capture_output=True, text=True).stdout
    return [
        line.strip()[:120]
        for line in ps.splitlines()
        if line.split()[0] == str(pgid) and not line.split()[1].startswith("Z")
    ]


EXPECTED = {
    "produced": 23,
    "acked": 19,
    "failed": 2,
    "indeterminate": 2,
    "acked_lost": 3,
    "acked_unseen": 3,
    "failed_present": 1,
    "indeterminate_present": 1,
    "duplicates_in_log": 1,
    "duplicates_delivered": 2,
    "phantoms": 1,
    "ack_offset_mismatch": 1,
    "divergent_offsets": 3,
    "reordered": 1,
    "max_ack_gap_ms": 1100,
    "torn_lines": 1,
}  # the same as tests/spark/test_checker.py on the local copy


def _as_parquet(run, out):
    """The record with Parquet ledgers (DuckDB writes them; the torn last line is left out)."""
    duck = {"string": "VARCHAR", "bigint": "BIGINT", "int": "INTEGER"}
    for kind, schema in SCHEMAS.items():
        (out / kind).mkdir(parents=True)
        cols = ", ".join(f"'{c}': '{duck[t.simpleString()]}'" for c, t in schema.items())
        duckdb.sql(
            f"COPY (SELECT * FROM read_json('{run}/{kind}/*.jsonl', columns={{{cols}}}, ignore_errors=true) "
            f"WHERE {REQUIRED[kind][0]} IS NOT NULL) "
            f"TO '{out}/{kind}/part0.parquet' (FORMAT parquet)"
        )
    for name in ("topology.json", "faults.jsonl"):
        (out / name).write_bytes((run / name).read_bytes())
    return out


def test_s3a_records_give_the_local_counts_and_get_their_reports(tmp_path, s3):
    """A JSON-lines record and its Parquet copy, both in one `dcdrill verify` (one Spark session)."""
    endpoint, client = s3
    run = records.anomalies(tmp_path / "run")  # every anomaly, a torn last line, faults.jsonl
    runs = {"jsonl": run, "parquet": _as_parquet(run, tmp_path / "parquet")}
    for fmt, path in runs.items():
        _upload(client, path, f"runs/{fmt}")
    done = _verify(endpoint, [f"s3a://{BUCKET}/runs/{fmt}" for fmt in runs])
    assert done.returncode == 1, done.stderr[-3000:]  # the verdicts fail: acked records were lost
    summaries = json.loads(done.stdout[: done.stdout.rindex("]") + 1])
    for fmt, summary in zip(runs, summaries):
        _assert_reported(client, f"runs/{fmt}", summary, torn_lines=1 if fmt == "jsonl" else 0)


def test_spark_submit_verifies_an_s3a_record_with_its_own_options(tmp_path, s3):
    """spark-submit's --master and --conf are kept (the verifier's defaults only fill the rest)."""
    endpoint, client = s3
    _upload(client, records.anomalies(tmp_path / "run"), "runs/spark-submit")
    done = _verify(endpoint, [f"s3a://{BUCKET}/runs/spark-submit"], "spark-submit")
    assert done.returncode == 1, done.stderr[-3000:]
    summary = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    stored = _assert_reported(client, "runs/spark-submit", summary, torn_lines=1)
    assert stored["spark"]["master"] == "local[3]" and stored["spark"]["shuffle_partitions"] == 3, stored["spark"]


def _assert_reported(client, prefix: str, summary: dict, torn_lines: int) -> dict:
    """The summary's counts, and its report beside the record in the bucket; the stored summary."""
    assert summary["counts"] == {**EXPECTED, "torn_lines": torn_lines}
    assert summary["faults"][0]["target"] == "dc-a"
    keys = {o["Key"] for o in client.list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/report/")["Contents"]}
    assert keys == {f"{prefix}/report/{n}" for n in ("summary.json", "index.html", "junit.xml")}
    stored = json.loads(client.get_object(Bucket=BUCKET, Key=f"{prefix}/report/summary.json")["Body"].read())
    assert stored["counts"] == summary["counts"] and stored["verdict"] == "fail"
    return stored


def test_s3a_record_without_audit_is_bad_input(tmp_path, s3):
    endpoint, client = s3
    run = records.write(tmp_path / "run", [records.p("p1", 0, "ok", 0, 0, 1000)], [], [])
    (run / "audit").rmdir()
    _upload(client, run, "runs/r2")
    done = _verify(endpoint, [f"s3a://{BUCKET}/runs/r2"])
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"s3a://{BUCKET}/runs/r2/audit: ledger folder missing" in done.stderr
