"""`dcdrill verify` and spark-submit's entry (dcdrill/verify_command.py): exit codes, several
records in one command, and spark-submit's own options."""

import json
import os
import subprocess
import sys
from pathlib import Path

from dcdrill import exits, verify_command
from dcdrill.spark import session
from tests import records
from tests.records import a, c, p


def test_cli_exit_codes(tmp_path, monkeypatch, capsys):
    assert verify_command.main([str(tmp_path / "nowhere")]) == exits.EXIT_BAD_INPUT
    monkeypatch.setattr(session.java_runtime, "s3a_jars", lambda: [])  # a machine without `make setup`'s s3a jars
    assert verify_command.main(["s3a://bucket/runs/r1", "--quiet"]) == exits.EXIT_BAD_INPUT
    assert "s3a:// records need hadoop-aws" in capsys.readouterr().err


def test_several_records_in_one_command(tmp_path, spark, capsys):
    """Each record verified and reported; the exit code is the worst; bad input in one record
    does not stop the others."""
    clean = records.write(tmp_path / "clean", [p("p1", 0, "ok", 0, 0, 1000)], [a(0, 0, "p1", 0)], [c(0, 0, "p1", 0)])
    lossy = records.anomalies(tmp_path / "lossy", unclean=False)
    assert verify_command.main([str(clean), str(lossy), "--quiet"]) == exits.EXIT_FAIL
    out = capsys.readouterr().out
    assert out.count("verdict: PASS") == 1 and out.count("verdict: FAIL") == 1
    assert f"report: {lossy}/report/index.html" in out
    code = verify_command.main([str(clean), str(tmp_path / "nowhere"), str(lossy), "--quiet", "--json"])
    captured = capsys.readouterr()
    assert code == exits.EXIT_BAD_INPUT and "nowhere: drill record directory missing" in captured.err
    assert [s["run"] for s in json.loads(captured.out)] == ["clean", "lossy"]
    assert json.loads((clean / "report" / "summary.json").read_text())["verdict"] == "pass"


def _spark_submit(run, *options):
    venv_bin = str(Path(sys.executable).parent)
    return subprocess.run(
        [os.path.join(venv_bin, "spark-submit"), *options, "dcdrill/verify_command.py", str(run), "--quiet"],
        capture_output=True,
        text=True,
        cwd=Path(verify_command.__file__).parent.parent,
        timeout=600,
        env={**os.environ, "PATH": f"{venv_bin}:{os.environ['PATH']}"},
    )


def test_spark_submit_without_the_kernel_jar_names_it(tmp_path):
    from dcdrill.spark import java_runtime

    done = _spark_submit(records.anomalies(tmp_path / "run"), "--master", "local[1]")
    assert done.returncode == exits.EXIT_BAD_INPUT
    # spark-submit hands the Python driver's stderr on through its own stdout
    assert f"pass --jars {java_runtime.kernel_jar()} to spark-submit" in done.stdout + done.stderr
    assert not (tmp_path / "run" / "report").exists()
