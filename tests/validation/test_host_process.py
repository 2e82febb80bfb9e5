"""The runner a workload process starts under on its client host (validation/host_process.py),
without a lab: its request, its last line, its log on the host's disk, and `--stop`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dcdrill.validation import host_process
from tests.process_configs import process_config

RUNNER = [sys.executable, "-m", "dcdrill.validation.host_process"]


def test_a_process_that_fails_ends_with_its_exit_and_its_log_on_the_hosts_disk(tmp_path):
    folder = tmp_path / "agents" / "run-1"
    config = process_config(bootstrap_timeout_ms=2000, producer_id="p1")
    request = dict(zip(host_process.REQUEST_FIELDS, ("producer", "p1", config, "")))
    # stdin stays open: its closing would be the control saying stop
    runner = subprocess.Popen([*RUNNER, str(folder)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    runner.stdin.write(json.dumps(request) + "\n")
    runner.stdin.flush()
    out = runner.stdout.read()
    assert runner.wait(60) == 2
    runner.stdin.close()
    last = json.loads(out.strip().splitlines()[-1])
    assert last[host_process.EXIT] == 2
    assert "no broker reachable at 127.0.0.1:1" in (folder / "logs" / "p1.log").read_text()


def test_closing_stdin_stops_the_process_as_sigterm_would(tmp_path):
    config = process_config(bootstrap_timeout_ms=30000, producer_id="p1")
    request = dict(zip(host_process.REQUEST_FIELDS, ("producer", "p1", config, "")))
    res = subprocess.run(
        [*RUNNER, str(tmp_path / "f")], input=json.dumps(request) + "\n", capture_output=True, text=True, timeout=20
    )  # well before its 30 s bootstrap timeout
    assert json.loads(res.stdout.strip().splitlines()[-1])[host_process.EXIT] in (0, 1, 2, 128 + 15), res.stdout


def test_a_bad_request_is_refused_naming_what_is_missing(tmp_path):
    res = subprocess.run(
        [*RUNNER, str(tmp_path / "f")],
        input=json.dumps({"module": "shell", "name": "x"}) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 2 and "missing ['config', 'password']" in res.stderr


def test_stop_ends_what_runs_naming_the_folder_and_nothing_else(tmp_path):
    folder = tmp_path / "agents" / "run-2"
    folder.mkdir(parents=True)
    ours = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(folder)])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", str(folder) + "-other"])
    try:
        res = subprocess.run([*RUNNER, "--stop", str(folder)], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout) == {"stopped": [ours.pid], "exists": True}
        assert ours.wait(5) is not None and other.poll() is None
    finally:
        for p in (ours, other):
            p.kill()
            p.wait()


def test_a_producers_acknowledgements_are_relayed_as_its_ledger_grows(tmp_path):
    """What the control's latency probe reads (the ledger itself stays on the host): each new
    `ok` row once, a line still being written only when it is whole."""
    ledger = tmp_path / "p1.jsonl"
    tail = host_process.AckTail(ledger)
    assert tail.read() == []  # not written yet

    def row(seq, status, ack):
        return json.dumps({"seq": seq, "status": status, "send_ms": 1000, "ack_ms": ack})

    ledger.write_text(row(0, "ok", 1012) + "\n" + row(1, "fail", None) + "\n" + row(2, "ok", 1030)[:20])
    assert tail.read() == [[1012, 12]]
    with open(ledger, "a") as f:
        f.write(row(2, "ok", 1030)[20:] + "\n")
    assert tail.read() == [[1030, 30]] and tail.read() == []


@pytest.mark.skipif(os.geteuid() != 0, reason="the agents' uids are root's to give")
def test_agents_write_their_ledgers_in_a_record_made_0700(tmp_path):
    """tempfile.mkdtemp makes 0700 folders: an agent, started in the record and dropped to its own
    uid in the agents' group (validation/clients.become_agent), still writes its ledger."""
    import tempfile

    run = Path(tempfile.mkdtemp(dir=tmp_path))
    host_process.open_to_agents(run, 300_000)
    agent = (
        f"import os; os.chdir({str(run)!r}); os.setgroups([]); os.setgid(300000); os.setuid(300002); "
        "open('produced/p1.jsonl', 'w').write('{}')"
    )
    res = subprocess.run([sys.executable, "-c", agent], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert (run / "produced" / "p1.jsonl").stat().st_uid == 300_002
