"""`dcdrill verify` on a master whose executors are JVMs of their own (local-cluster[2,1,1024]):
the kernel jar reaches them through spark.jars, and the counts are the plain reference checker's
(spark/reference.py, which tests/spark/test_reference.py holds local[*] to). What a
user gets on a standalone, YARN or Kubernetes cluster, here on one machine and on loopback."""

import json
import os
import subprocess
import sys

from dcdrill.spark import reference
from tests import ROOT, records


def verify(run, master: str) -> dict:
    env = {**os.environ, "DCDRILL_SPARK_MASTER": master}
    res = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "verify", str(run), "--json", "--quiet"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=600,
    )
    assert res.returncode in (0, 1), res.stderr[-3000:]
    return json.loads(res.stdout)


def test_executors_in_their_own_jvms_count_as_the_reference_does(tmp_path):
    run = records.random_record(tmp_path / "random", seed=7)
    on_cluster = verify(run, "local-cluster[2,1,1024]")
    assert on_cluster["spark"]["master"] == "local-cluster[2,1,1024]"
    want = reference.counts(run)
    assert {k: on_cluster["counts"][k] for k in want} == want
    assert want["produced"] > 0 and want["acked_lost"] > 0, want
