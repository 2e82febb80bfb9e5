"""A plain `chaos run` of an experiment whose fault raises exits non-zero (chaos/faults/controls.py):
without the control, Chaos Toolkit records the failed action and exits 0. `chaos discover` finds
the extension, and `chaos report` (the `report` extra) renders a journal."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dcdrill.chaos import experiment
from tests import ROOT

CHAOS = Path(sys.executable).parent / "chaos"
NOOP = {"type": "python", "module": "os.path", "func": "exists", "arguments": {"path": "/"}}


def run(tmp_path, controls: bool) -> tuple[int, dict]:
    exp = {
        "version": "1.0.0",
        "title": "a fault that cannot be injected",
        "description": "dc-z is no DC of local",
        "configuration": {"stack": "local", "run_dir": str(tmp_path / "record")},
        "method": [
            {
                "type": "action",
                "name": "kill-dc",
                "provider": {
                    "type": "python",
                    "module": "dcdrill.chaos.faults.actions",
                    "func": "kill_dc",
                    "arguments": {"dc": "dc-z"},
                },
            },
            {"type": "action", "name": "after-the-fault", "provider": NOOP},
        ],
        "rollbacks": [{"type": "action", "name": "heal-stand-in", "provider": NOOP}],
        "runtime": {"rollbacks": {"strategy": "always"}},
    }
    if controls:
        exp["controls"] = experiment.compose("kill-dc")["controls"]
    path, journal = tmp_path / "experiment.json", tmp_path / "journal.json"
    path.write_text(json.dumps(exp))
    res = subprocess.run(
        [str(CHAOS), "--no-version-check", "run", "--journal-path", str(journal), str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    return res.returncode, json.loads(journal.read_text())


@pytest.mark.parametrize("controls", [False, True])
def test_a_fault_that_raises_fails_a_plain_chaos_run(tmp_path, controls):
    code, journal = run(tmp_path, controls)
    ran = {r["activity"]["name"]: r["status"] for r in journal["run"]}
    assert ran["kill-dc"] == "failed"
    assert [r["status"] for r in journal["rollbacks"]] == ["succeeded"]  # the heal still plays
    if controls:
        assert (code, journal["status"]) == (1, "interrupted")
        assert "after-the-fault" not in ran  # nothing more to prove
    else:  # what Chaos Toolkit does on its own, which the control exists for
        assert (code, journal["status"]) == (0, "completed")


def test_chaos_discover_finds_the_extension_by_its_documented_name(tmp_path):
    out = tmp_path / "discovery.json"
    res = subprocess.run(
        [str(CHAOS), "--no-version-check", "discover", "--no-install", "--discovery-path", str(out), "dcdrill"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    found = json.loads(out.read_text())
    assert found["extension"]["name"] == "dcdrill"
    funcs = {(a["mod"], a["name"]) for a in found["activities"]}
    assert {("dcdrill.chaos.faults.actions", "kill_dc"), ("dcdrill.chaos.faults.actions", "heal")} <= funcs


def test_chaos_report_renders_the_journal_of_a_run(tmp_path):
    """chaostoolkit-reporting, with pandoc from pypandoc_binary: Chaos Toolkit's view of the run
    (its activities and their outcomes); the verdict on the records is the Spark report's."""
    run(tmp_path, True)
    out = tmp_path / "chaos-report.html"
    res = subprocess.run(
        [str(CHAOS), "--no-version-check", "report", "--export-format=html5", str(tmp_path / "journal.json"), str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    page = out.read_text()
    assert "a fault that cannot be injected" in page and "kill-dc" in page and "interrupted" in page
