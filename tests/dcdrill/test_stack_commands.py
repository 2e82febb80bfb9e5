"""`dcdrill plan`, `schema`, `lab` and `status` (dcdrill/stack_commands.py): the refusals that need no cluster."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dcdrill import cli

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    return subprocess.run([sys.executable, "-m", "dcdrill.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_plan_json_has_inventory_violations_and_predictions():
    res = run("plan", "--stack", "local", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["violations"] == []
    assert {
        k: v for k, v in out["predictions"]["dc-a"].items() if k not in ("faults", "writes_why", "visible_why")
    } == {"quorum_survives": True, "writable": False, "visible": False, "acked_loss_possible": False}
    assert (
        out["predictions"]["dc-a"]["writes_why"]
        == "2 replicas outside dc-a < min.insync.replicas=3: acks=all writes are refused"
    )
    assert out["predictions"]["dc-a"]["faults"]["power-loss"]["acked_loss_possible"] is False
    assert set(out["inventory"]["all"]["children"]) == {"zookeeper", "kafka_controller", "kafka_broker", "client"}
    tx = out["transactions"]  # infra/transaction_rules.py: a broker DC's loss stops them, loses no commit
    assert (tx["transaction_version"], tx["state_log"]) == (0, {"factor": 4, "min_insync": 3})
    assert tx["per_dc"]["dc-a"]["writable"] is False and tx["per_dc"]["dc-c"]["writable"] is True


def test_plan_says_what_each_dc_loss_does_to_transactions():
    res = run("plan", "--stack", "local-power-loss")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("transactions (transaction.version 0;"))
    assert "__transaction_state factor 4, min.isr 2" in lines[head]
    assert any(
        line.split()
        == ["dc-a", "transactions", "continue", "commit", "loss", "impossible", "/", "impossible", "/", "POSSIBLE"]
        for line in lines[head:]
    ), lines[head:]


@pytest.fixture
def broken_stack(tmp_path, monkeypatch):
    """A stack directory with one rule-breaking stack: minInsync 2 <= r_d 2 under consistency-first."""
    cfg = yaml.safe_load((ROOT / "Pulumi.local.yaml").read_text())
    cfg["config"]["dcdrill:cluster"]["replication"]["minInsync"] = 2
    (tmp_path / "Pulumi.broken.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("DCDRILL_PROJECT", str(tmp_path))
    return cfg


def test_plan_exits_2_naming_the_rule_unless_accepted(broken_stack, tmp_path, capsys):
    assert cli.main(["plan", "--stack", "broken"]) == 2
    assert (
        "[consistency-min-insync] consistency-first needs minInsync > replicas in the fullest DC: minInsync 2 <= r_d 2"
        in capsys.readouterr().out
    )
    broken_stack["config"]["dcdrill:acceptRisks"] = ["consistency-min-insync"]
    (tmp_path / "Pulumi.broken.yaml").write_text(yaml.safe_dump(broken_stack))
    assert cli.main(["plan", "--stack", "broken"]) == 0
    assert "(accepted risk)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "voters, code, says",
    [
        ((1, 1, 1), 0, "3 controllers: dc-a 1, dc-b 1, dc-c 1; survives any one DC"),
        ((2, 2, 1), 0, "5 controllers: dc-a 2, dc-b 2, dc-c 1; survives any one DC"),
        ((2, 0, 1), 2, "[quorum-dc-loss] losing dc-a leaves 1 of 3 controllers, below the quorum of 2"),
        ((1, 1, 2), 2, "[quorum-even-voters] 4 controllers is an even number"),
    ],
)
def test_plan_on_kraft_layouts(voters, code, says, tmp_path, monkeypatch, capsys):
    cfg = yaml.safe_load((ROOT / "Pulumi.local-kraft.yaml").read_text())
    for dc, n in zip(cfg["config"]["dcdrill:cluster"]["datacenters"], voters):
        dc["controllers"] = n
    (tmp_path / "Pulumi.k.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("DCDRILL_PROJECT", str(tmp_path))
    assert cli.main(["plan", "--stack", "k"]) == code
    assert says in capsys.readouterr().out


def test_the_shipped_misplaced_quorum_is_an_accepted_risk_predicted_to_stall(capsys):
    assert cli.main(["plan", "--stack", "local-kraft-misplaced", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [v["rule"] for v in out["violations"]] == ["quorum-dc-loss"]
    assert out["predictions"]["dc-a"]["quorum_survives"] is False and out["predictions"]["dc-a"]["writable"] is False
    assert out["predictions"]["dc-b"]["quorum_survives"] is True


def test_lab_up_refuses_a_broken_stack_before_creating_anything(broken_stack, capsys):
    from dcdrill.infra import lifecycle

    with pytest.raises(lifecycle.RuleViolation, match="consistency-min-insync"):
        lifecycle.checked("broken")


def test_plan_matrix_shows_every_setting_on_the_stack_layout(capsys):
    assert cli.main(["plan", "--stack", "local", "--matrix"]) == 0
    out = capsys.readouterr().out
    assert "replicas per DC: dc-a 2, dc-b 2, dc-c 0" in out
    [own] = [line for line in out.splitlines() if line.lstrip().startswith("*")]
    assert own.split()[:4] == ["*all", "3", "off", "STOP,"] and own.endswith("consistency-first")
    assert cli.main(["plan", "--stack", "local-availability", "--matrix", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 * 2 * 2  # acks 1 / all, minInsync 1-2, unclean off / on
    [own] = [r for r in rows if r["current"]]
    assert (own["acks"], own["min_insync"], own["unclean_leader_election"]) == ("1", 1, True)
    assert own["profiles"] == ["availability-first"] and own["predictions"]["dc-a"]["acked_loss_possible"]


def test_plan_matrix_by_fault_shows_what_a_power_loss_takes(capsys):
    """local-power-loss: minInsync 2 fits in one DC's 2 replicas. A kill or a clean stop leaves that
    DC its records; a power loss takes what it had not flushed."""

    def own_row(*extra) -> list[str]:
        assert cli.main(["plan", "--stack", "local-power-loss", "--matrix", *extra]) == 0
        out = capsys.readouterr().out
        [own] = [line for line in out.splitlines() if line.lstrip().startswith("*")]
        return own.split()

    assert own_row()[:7] == ["*all", "2", "off", "continue,", "no", "loss", "continue,"]
    assert own_row("--fault", "stop-dc")[:6] == ["*all", "2", "off", "continue,", "no", "loss"]
    assert own_row("--fault", "power-loss")[:7] == ["*all", "2", "off", "continue,", "LOSS", "possible", "continue,"]
    assert cli.main(["plan", "--stack", "local", "--fault", "power-loss"]) == 2
    assert "--fault goes with --matrix" in capsys.readouterr().err
    assert run("plan", "--stack", "local", "--matrix", "--fault", "meteor").returncode == 2


def test_unknown_stack_lists_the_valid_ones(capsys):
    assert cli.main(["plan", "--stack", "nope"]) == 2
    assert (
        "valid: aws-2region-replicated, aws-2region-tiebreaker, aws-3az, aws-3az-kraft, aws-3az-tiebreaker, "
        "local, local-3dc, local-availability, local-kraft, local-kraft-misplaced" in capsys.readouterr().err
    )


def test_status_before_lab_up_names_the_command_to_run(tmp_path, monkeypatch):
    """No inventory and no Pulumi state yet: exit 2 naming `dcdrill lab up`, not a KeyError."""
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "cache"))
    from dcdrill.infra import lifecycle, pulumi_cli

    monkeypatch.setattr(pulumi_cli, "outputs", lambda stack: {})  # what a stack never brought up outputs
    with pytest.raises(
        lifecycle.NotUp, match=r"stack local is not up \(no inventory yet\): dcdrill lab up --stack local"
    ):
        lifecycle.inventory("local")


def test_status_before_setup_names_the_setup_not_a_traceback(tmp_path):
    """No `pulumi` on PATH and none built into the cache yet."""
    env = {**os.environ, "DCDRILL_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    env.pop("DCDRILL_PULUMI", None)
    res = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "status", "--stack", "local"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "no `pulumi` on PATH" in res.stderr and "run `dcdrill setup` (or `make setup`) first" in res.stderr
