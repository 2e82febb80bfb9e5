"""The KRaft lab (`local-kraft`: Kafka 4.x, one controller in each of three DCs) brought up and
drilled for real: the controller quorum in status, a second configuration run that formats
nothing, and the drills whose promises depend on the quorum. These run after every `local` lab
test (tests/conftest.py), so each lab comes up once."""
import json
import sys
import subprocess
from pathlib import Path

import pytest

from infra import ansible, status

pytestmark = pytest.mark.lab
DCDRILL = [sys.executable, "-m", "dcdrill.cli"]


def drill(run: Path, *args, hold=20, timeout=600):
    return subprocess.run(DCDRILL + ["drill", "--stack", "local-kraft", "--hold", str(hold), "--run-dir", str(run),
                                     *args], capture_output=True, text=True, timeout=timeout)


def test_kraft_lab_has_its_quorum_in_three_dcs_and_a_second_run_formats_nothing(kraft_lab):
    st = status.cluster_status(kraft_lab)
    q = st["quorum"]
    assert (q["kind"], q["alive"], q["total"], q["quorum"]) == ("kraft", 3, 3, True), status.render(st)
    assert q["leader"] in {"ctl1.dc-a.lab", "ctl2.dc-b.lab", "ctl3.dc-c.lab"}
    assert sorted(n["dc"] for n in q["nodes"]) == ["dc-a", "dc-b", "dc-c"] and all(n["lag"] == 0 or n["lag"] < 50
                                                                                    for n in q["nodes"])
    assert status.healthy(st) and len(st["brokers"]) == 4
    def formatted():
        return {h.name: (Path(h.vars["data_root"]) / "kafka" / "data" / "meta.properties").read_text()
                for h in kraft_lab.hosts("kafka_controller", "kafka_broker")}

    meta = formatted()
    assert ansible.changed_total(ansible.run_site("local-kraft", quiet=True)) == 0  # formats (and changes) nothing
    assert formatted() == meta
    assert len({line for m in meta.values() for line in m.splitlines() if line.startswith("cluster.id=")}) == 1


def test_kraft_kill_dc_loses_no_acknowledged_record(kraft_lab, tmp_path):
    run = tmp_path / "kill"
    res = drill(run, "--experiment", "kill-dc", "--dc", "dc-a")
    assert res.returncode == 0, res.stdout + res.stderr
    s = json.loads((run / "report" / "summary.json").read_text())
    assert json.loads((run / "topology.json").read_text())["coordination"] == "kraft"
    assert s["verdict"] == "pass" and s["counts"]["acked_lost"] == 0 and s["counts"]["acked"] > 0
    [check] = s["prediction_checks"]  # the controller quorum keeps 2 of 3; minISR 3 with 2 brokers left: writes stop
    assert check["target"] == "dc-a" and check["observed"]["writable"] is False and check["as_predicted"], check
    # The controller fences dc-a's brokers once their heartbeats stop for broker.session.timeout.ms
    # (9 s); a controller leader in dc-a is replaced by one elsewhere, without a stall of the quorum.
    moves = s["faults"][0]["coordination"]
    assert set(moves["fenced_ms"]) == {"1", "2"} and 5_000 <= moves["fencing_ms"] <= 20_000, moves
    assert moves["leader_before"].startswith("ctl") and moves["leader_after_dc"] != "dc-a", moves
    assert moves["leaderless_ms"] <= 10_000, moves
    assert status.healthy(status.cluster_status(kraft_lab))


def test_kraft_tiebreaker_loss_keeps_writes_going(kraft_lab, tmp_path):
    run = tmp_path / "tie"
    res = drill(run, "--experiment", "tiebreaker-loss")
    assert res.returncode == 0, res.stdout + res.stderr
    s = json.loads((run / "report" / "summary.json").read_text())
    during = next(p for p in s["phases"] if p["phase"].startswith("during kill-tiebreaker"))
    assert during["acked"] > 0  # the two brokers' DCs still hold 2 of 3 controllers
    [check] = s["prediction_checks"]
    assert check["observed"]["writable"] is True and check["as_predicted"], check
    assert status.healthy(status.cluster_status(kraft_lab))
