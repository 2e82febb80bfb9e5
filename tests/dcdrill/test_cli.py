"""`dcdrill plan` and the refusals that need no cluster."""

import argparse
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


def test_drill_refuses_the_only_broker_dc_unless_forced(tmp_path, monkeypatch, capsys):
    cfg = yaml.safe_load((ROOT / "Pulumi.local.yaml").read_text())
    cfg["config"]["dcdrill:cluster"]["datacenters"] = [
        {"name": "dc-a", "brokers": 4, "zookeepers": 1},
        {"name": "dc-b", "brokers": 0, "zookeepers": 1},
        {"name": "dc-c", "brokers": 0, "zookeepers": 1},
    ]
    (tmp_path / "Pulumi.one.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("DCDRILL_PROJECT", str(tmp_path))
    assert cli.main(["drill", "--stack", "one", "--experiment", "kill-dc", "--dc", "dc-a"]) == 2
    assert "dc-a holds every broker" in capsys.readouterr().err


def drill_args(**given):
    """`dcdrill drill` arguments as argparse gives them, with `given` changed."""
    defaults = dict(
        stack="local",
        experiment="kill-dc",
        dc=None,
        other_dc=None,
        hold=None,
        repeat=1,
        force=False,
        acks=None,
        factor=None,
        min_insync=None,
        unclean=None,
        flush_each_write=False,
        profile=None,
        matrix=False,
        check=False,
        rate=200.0,
        keep_topic=False,
    )
    return argparse.Namespace(**{**defaults, **given})


def test_availability_first_drills_hold_the_fault_past_the_failover(capsys):
    """Writes must resume before the heal there, and failing over waits for the ZooKeeper session
    (18 s) and the producers' request timeout (10 s): the default hold is twice that."""
    from dcdrill import drill
    from dcdrill import drill_settings as settings

    def validate(stack_name, hold):
        args = drill_args(stack=stack_name, hold=hold)
        return settings.hold(args, drill.Plan(args).topology)

    assert (
        settings.failover_s() == 28.0 and settings.failover_s("kraft") == 29.0
    )  # fenced after 9 s, unclean cycle 10 s
    assert validate("local-availability", None) == 56.0 and validate("local", None) == 30.0
    assert capsys.readouterr().err == ""
    assert validate("local-availability", 30) == 30  # as asked, with a warning
    assert "a 30 s hold is short for availability-first" in capsys.readouterr().err
    assert cli.main(["drill", "--stack", "local", "--hold", "0"]) == 2
    assert "--hold must be > 0 seconds" in capsys.readouterr().err
    # --check validates every flag the drill will use: a hold or rate that is no finite, bounded number
    for flag, value in (("--hold", "nan"), ("--hold", "inf"), ("--hold", "3001"), ("--rate", "nan"), ("--rate", "-5")):
        assert cli.main(["drill", "--stack", "local", "--check", flag, value]) == 2, (flag, value)
        assert f"{flag} must be > 0" in capsys.readouterr().err
    assert cli.main(["drill", "--stack", "local", "--check", "--hold", "20", "--rate", "500"]) == 0


def test_a_drill_can_have_settings_of_its_own_on_the_stack_lab(tmp_path, capsys):
    """acks / factor / minInsync / unclean / profile for one drill: checked against the rules up
    front, handed to the experiment in the record's plan.json, read back by chaos/context.topology()."""
    from dcdrill import drill
    from dcdrill import drill_settings as settings
    from dcdrill.chaos import context
    from dcdrill.infra import rules
    from dcdrill.record import DrillRecord

    args = drill_args(acks="1", min_insync=2, unclean="on", profile="availability-first")
    plan = drill.Plan(args)
    t, dc = plan.topology, plan.dc
    assert plan.problems == []
    assert (t.profile, t.acks, t.replication.factor, t.replication.min_insync) == ("availability-first", "1", 4, 2)
    assert t.replication.unclean_leader_election and dc == "dc-a" and settings.hold(args, t) == 56.0
    written = drill.resolved_plan(args, plan, settings.given(args), plan.variables, tmp_path)
    DrillRecord(tmp_path).write_plan(written)
    assert json.loads((tmp_path / "plan.json").read_text())["configuration"] == {
        "stack": "local",
        "run_dir": str(tmp_path),
        "hold_s": 56.0,
        "rate": args.rate,
        "keep_topic": False,
        "dc": "dc-a",
        "other_dc": "dc-b",
    }
    assert DrillRecord(tmp_path).plan() == written
    read = context.topology({"stack": "local", "run_dir": str(tmp_path)})
    assert read == t and rules.resolved(read)["predictions"]["dc-a"]["acked_loss_possible"]
    assert context.topology({"stack": "local", "run_dir": str(tmp_path / "none")}).profile == "consistency-first"
    # Settings that break the profile's rules are refused before anything runs, naming the rule.
    assert cli.main(["drill", "--stack", "local", "--acks", "1"]) == 2
    assert "[consistency-acks]" in capsys.readouterr().err
    assert cli.main(["drill", "--stack", "local", "--factor", "5"]) == 2
    assert "[factor-exceeds-brokers] replication factor 5 > 4 brokers" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown drill settings"):
        read.with_settings({"acks": "all", "retries": 3})


def test_the_activities_load_the_stack_once_and_refuse_one_that_changed_mid_drill(tmp_path, monkeypatch):
    """chaos run's process loads the deployment once per record, and only while the stack still
    resolves to the topology.json the drill wrote before the experiment."""
    from dcdrill import drill
    from dcdrill import drill_settings as settings
    from dcdrill.chaos import context
    from dcdrill.infra import stack as stacks
    from dcdrill.record import DrillRecord

    args = drill_args(min_insync=2)
    plan = drill.Plan(args)
    record = DrillRecord(tmp_path)
    record.write_plan(drill.resolved_plan(args, plan, settings.given(args), plan.variables, tmp_path))
    record.write_topology(stacks.drill_topology("local", plan.deployment.with_settings(settings.given(args))))
    loads = []
    real = stacks.load_deployment
    monkeypatch.setattr(stacks, "load_deployment", lambda name: loads.append(name) or real(name))
    configuration = {"stack": "local", "run_dir": str(tmp_path)}
    assert context.topology(configuration).replication.min_insync == 2
    assert context.topology(configuration) is context.topology(configuration) and loads == ["local"]
    # topology.json says factor 3 where the stack now says 4: the drill was resolved from another stack
    topology = json.loads((tmp_path / "topology.json").read_text())
    (tmp_path / "topology.json").write_text(json.dumps(topology | {"replication_factor": 3}))
    context._deployment_of.cache_clear()
    with pytest.raises(ValueError, match=r"no longer resolves to the topology .*changed: replication_factor"):
        context.topology(configuration)


def test_every_drill_record_folder_gets_its_own_topic(tmp_path):
    """Two series both have a drill-1, and a --matrix series one per setting: a topic named after
    the folder alone was written by several drills, whose audit then saw the others' records
    (phantoms) and whose topic kept the first drill's settings."""
    from dcdrill.chaos.context import drill_topic

    a, b = (drill_topic({"run_dir": str(tmp_path / s / "drill-1")}) for s in ("x3", "matrix/acks-1_min-insync-2"))
    assert a != b and a.startswith("dcdrill-drill-1-") and b.startswith("dcdrill-drill-1-")
    assert drill_topic({"run_dir": str(tmp_path / "x3" / "drill-1")}) == a  # start and audit agree
    assert drill_topic({"run_dir": str(tmp_path / "a b+c")}).startswith("dcdrill-a-b-c-")


def test_drill_matrix_plans_one_drill_per_setting_that_meets_a_profile():
    from dcdrill import drill
    from dcdrill import drill_settings as settings

    args = drill_args(matrix=True)
    t = drill.Plan(args).topology
    plans = dict(settings.plans(args, t))
    assert len(plans) == 8  # of the 16 settings on local's layout (see the plan --matrix test)
    assert plans["acks-all_min-insync-3_unclean-off"] == {
        "profile": "consistency-first",
        "acks": "all",
        "min_insync": 3,
        "unclean_leader_election": False,
    }
    assert plans["acks-1_min-insync-2_unclean-on"]["profile"] == "availability-first"
    assert settings.plans(drill_args(), t) == [("", {})]
    assert any(
        "--matrix drills every setting itself" in p for p in drill.Plan(drill_args(matrix=True, acks="all")).problems
    )


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


def test_every_command_has_help():
    for cmd in ("plan", "lab", "status", "workload", "verify", "history", "drill", "experiment"):
        res = run(cmd, "--help")
        assert res.returncode == 0 and "usage:" in res.stdout


@pytest.mark.parametrize("argv", [["--factor", "100000000"], ["--min-insync", "0"], ["--factor", "three"]])
def test_drill_settings_out_of_range_exit_2_naming_the_option(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["drill", "--stack", "local", "--check", *argv])
    assert exit_.value.code == 2 and f"argument {argv[0]}" in capsys.readouterr().err


def test_drill_check_takes_the_quorum_leaders_dc_for_a_dc_loss_only(capsys):
    assert (
        cli.main(["drill", "--stack", "local-kraft", "--experiment", "kill-dc", "--dc", "quorum-leader", "--check"])
        == 0
    )
    assert "target the DC of the quorum leader" in capsys.readouterr().out
    assert cli.main(["drill", "--stack", "local", "--experiment", "slow-link", "--dc", "quorum-leader", "--check"]) == 2
    assert "--dc quorum-leader is for the loss of a DC" in capsys.readouterr().err


def test_version_and_verify_without_the_lab_modules():
    import importlib.metadata
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "dcdrill.cli", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0 and res.stdout.strip() == f"dcdrill {importlib.metadata.version('dcdrill')}"
    # `dcdrill verify` parses with spark's subcommands alone: neither the lab's nor the drill's modules load
    probe = (
        "import sys; from dcdrill import cli; p = cli.build_parser(verifier_only=True); p.parse_args(['verify', 'x']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pulumi', 'ansible') "
        "or m.startswith(('dcdrill.chaos', 'dcdrill.infra.schema'))))"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr


def test_bad_drill_input_exits_2_before_any_lab(tmp_path):
    """Refused by the preflight: no lab is brought up, nothing is written."""
    for args, needle in (
        (["--experiment", "nope"], "valid: cut-mirror-link, isolate-dc, isolate-then-kill, isolate-then-power-loss"),
        (["--dc", "dc-z"], "valid: dc-a, dc-b, dc-c"),
    ):
        res = subprocess.run(
            [sys.executable, "-m", "dcdrill.cli", "drill", "--stack", "local", "--run-dir", str(tmp_path / "x"), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 2 and needle in res.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("argv", [["plan", "--stack", "local", "--json"], ["schema"]])
def test_a_reader_that_leaves_early_ends_the_command_without_a_traceback(argv):
    """`dcdrill plan --json | head`: the pipe closes before dcdrill has written; it exits as a
    shell-killed writer would (141), saying nothing."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dcdrill.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141 and "Traceback" not in err and "BrokenPipe" not in err, err


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
