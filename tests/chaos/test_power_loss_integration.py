"""A real power loss on the lab (`local`, whose hosts' data roots sit on dcdrill-disk): the
disks lose what was not durable, the brokers recover from it, and acknowledged records survive
exactly where dcdrill plan says they do."""
from pathlib import Path

import pytest

from dcdrill.infra import status
from dcdrill.record import DrillRecord
from tests.chaos.test_drill_integration import activity, drill, summary

pytestmark = pytest.mark.lab


def _broker_logs_since(lab, dc: str, needle: str) -> list[str]:
    out = []
    for h in lab.in_dc(dc, ("kafka_broker",)):
        log = Path(h.vars["data_root"]) / "kafka" / "server.log"
        out += [line for line in log.read_text(errors="replace").splitlines() if needle in line]
    return out


def test_a_power_loss_takes_unflushed_data_and_min_insync_above_a_dc_keeps_every_acked_record(lab, tmp_path):
    run = tmp_path / "power"
    res = drill(run, "--experiment", "power-loss", "--dc", "dc-a", hold=20)
    assert res.returncode == 0, res.stdout + res.stderr
    [fault] = DrillRecord(run).faults()
    assert (fault["fault"], fault["target"]) == ("power-loss", "dc-a") and fault["end_ms"] > fault["start_ms"]
    cut = activity(run, "power-loss")["output"]
    # Every Kafka and ZooKeeper host of dc-a lost power; the brokers' logs had unflushed bytes.
    assert sorted(cut["lost"]) == ["b1.dc-a.lab", "b2.dc-a.lab", "zk1.dc-a.lab"], cut
    assert all(cut["lost"][b]["bytes_lost"] > 0 for b in ("b1.dc-a.lab", "b2.dc-a.lab")), cut
    s = summary(run)
    assert s["verdict"] == "pass" and s["counts"]["acked_lost"] == 0 and s["counts"]["acked"] > 0
    [check] = s["prediction_checks"]  # minInsync 3 > dc-a's 2 replicas: the model said no loss
    assert check["as_predicted"] and check["predicted"]["acked_loss_possible"] is False, check
    assert "so on at least 1 outside dc-a's 2" in check["predicted"]["why"]
    assert status.healthy(status.cluster_status(lab))


def test_a_power_loss_after_the_isr_shrank_into_one_dc_loses_acknowledged_records(lab, tmp_path):
    """The issue's case: minInsync 2 with 2 replicas per DC, unclean election off. dc-b is cut off,
    the ISR shrinks to dc-a's replicas, dc-a keeps acknowledging alone, then loses power. A kill
    would lose nothing (dc-a comes back with its page cache); the power loss takes what dc-a had
    not flushed, and dc-a's replicas, still the ISR, are elected without it."""
    run = tmp_path / "shrink"
    res = drill(run, "--experiment", "isolate-then-power-loss", "--dc", "dc-a", "--other-dc", "dc-b",
                "--min-insync", "2", "--profile", "availability-first", hold=15)
    assert res.returncode in (0, 1), res.stdout + res.stderr  # a verdict either way, never a crash
    assert [(f["fault"], f["target"]) for f in DrillRecord(run).faults()] == [("isolate-dc", "dc-b"),
                                                                             ("power-loss", "dc-a")]
    s = summary(run)
    assert s["counts"]["acked_lost"] > 0, s["counts"]
    checks = {c["fault"]: c for c in s["prediction_checks"]}
    assert checks["power-loss"]["predicted"]["acked_loss_possible"] is True
    assert "a power loss takes what dc-a's replicas had not flushed" in checks["power-loss"]["predicted"]["why"]
    assert checks["power-loss"]["as_predicted"], checks
    # dc-a's brokers found their logs cut short when they came back.
    assert _broker_logs_since(lab, "dc-a", "unflushed") or _broker_logs_since(lab, "dc-a", "Recovering"), \
        "no recovery in dc-a's broker logs"
    assert status.healthy(status.cluster_status(lab))


