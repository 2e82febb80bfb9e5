"""A real power loss on the lab: `local-power-loss` (factor 4, minInsync 2: min.insync.replicas
can be met inside one DC; unclean election off), whose hosts' data roots sit on dcdrill-disk.
A kill of a DC loses no acknowledged record there; a power loss after the ISR shrank into that
DC does, as `dcdrill plan` predicts."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dcdrill.infra import lifecycle
from dcdrill.record import DrillRecord
from tests.chaos.test_drill_integration import activity, summary

pytestmark = pytest.mark.lab
STACK = "local-power-loss"


def drill(run, *args, hold=15):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "dcdrill.cli",
            "drill",
            "--stack",
            STACK,
            "--hold",
            str(hold),
            "--run-dir",
            str(run),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )


def _recovered(lab, dc: str) -> list[str]:
    """dc's brokers' log lines about recovering a log after an unclean shutdown."""
    out = []
    for h in lab.in_dc(dc, ("kafka_broker",)):
        log = Path(h.vars["data_root"]) / "kafka" / "server.log"
        out += [
            line for line in log.read_text(errors="replace").splitlines() if "unflushed" in line or "Recovering" in line
        ]
    return out


# A lab of its own (FUSE disks under every data root): its bring-up and this drill took 4.2 min of
# CI, whose 45 minutes the SSM plugin's build in setup now shares; the disks' cut is tested
# without a lab (tests/infra/lab/test_disk.py) and a kill-dc drill on `local` runs in CI.
@pytest.mark.skipif(
    not os.environ.get("DCDRILL_SLOW_LABS"), reason="a lab of its own (about 4 min): DCDRILL_SLOW_LABS=1 runs it"
)
def test_a_kill_of_the_dc_loses_no_acknowledged_record(power_loss_lab, tmp_path):
    run = tmp_path / "kill"
    # Held past the failover (ZooKeeper session 18 s + request timeout 10 s): writes go on without dc-a.
    res = drill(run, "--experiment", "kill-dc", "--dc", "dc-a", hold=45)
    assert res.returncode == 0, res.stdout + res.stderr
    s = summary(run)
    assert s["counts"]["acked_lost"] == 0 and s["counts"]["acked"] > 0
    [check] = s["prediction_checks"]
    assert check["as_predicted"] and check["predicted"]["acked_loss_possible"] is False, check
    assert "after a kill (the hosts keep their page caches) they have every record" in check["predicted"]["why"]


# In CI, on a lab of its own (about 5 min with its bring-up): the README's power-loss drill, so a
# regression of that path fails CI; it also stands for the isolate-dc drill on `local`. (A cut
# seconds after the leader changes could leave a follower loop in Kafka, docs/evidence.md: the
# experiment waits out the journal's commit first.)
def test_a_power_loss_after_the_isr_shrank_into_the_dc_loses_acknowledged_records(power_loss_lab, tmp_path):
    """dc-b is cut off, the ISR shrinks to dc-a's two replicas, dc-a keeps acknowledging alone,
    then loses power: its disks drop what was not flushed, and dc-a's replicas, still the ISR,
    are elected without it."""
    run = tmp_path / "shrink"
    res = drill(run, "--experiment", "isolate-then-power-loss", "--dc", "dc-a", "--other-dc", "dc-b")
    assert res.returncode in (0, 1), res.stdout + res.stderr  # a verdict, either way: never a crash
    assert [(f["fault"], f["target"]) for f in DrillRecord(run).faults()] == [
        ("isolate-dc", "dc-b"),
        ("power-loss", "dc-a"),
    ]
    # The observers stayed out of the DC the drill cut: its client is dc-a's, whose power loss
    # spares the client hosts (issue 69 item 7: on AWS a cut DC's client loses its session).
    assert activity(run, "watch-coordination")["output"]["observer"] == "c1.dc-a.lab"
    cut = activity(run, "power-loss")["output"]
    assert sorted(cut["lost"]) == ["b1.dc-a.lab", "b2.dc-a.lab", "zk1.dc-a.lab"], cut
    assert all(cut["lost"][b]["bytes_lost"] > 0 for b in ("b1.dc-a.lab", "b2.dc-a.lab")), cut
    s = summary(run)
    assert s["counts"]["acked_lost"] > 0, s["counts"]
    checks = {c["fault"]: c for c in s["prediction_checks"]}
    assert checks["power-loss"]["predicted"]["acked_loss_possible"] is True
    assert "a power loss takes what dc-a's replicas had not flushed" in checks["power-loss"]["predicted"]["why"]
    assert checks["power-loss"]["as_predicted"] and checks["isolate-dc"]["as_predicted"], checks
    assert _recovered(power_loss_lab, "dc-a"), "dc-a's brokers recovered nothing"
    # Healthy again, and staying so: a verify beside CI's unit track starves the lab's JVMs, and a
    # follower may lag out of its ISR for seconds after the drill's wait saw it full (CI, stop 83).
    lifecycle.wait_healthy(power_loss_lab, timeout_s=90, quiet=True)  # its error renders the status
