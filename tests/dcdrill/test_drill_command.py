"""`dcdrill drill` and `heal` (dcdrill/drill_command.py, dcdrill/drill.py): the plan, the drill's own settings and
the refusals before any lab."""

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dcdrill import cli

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    return subprocess.run([sys.executable, "-m", "dcdrill.cli", *args], capture_output=True, text=True, cwd=ROOT)


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
        client="confluent",
        idempotence=None,
        transactions=None,
        abort_fraction=None,
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
        "client": "confluent",
        "idempotence": "default",
        "transaction_size": 0,
        "abort_fraction": 0.0,
        "dc": "dc-a",
        "other_dc": "dc-b",
        "observers_avoid": ["dc-a"],
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


@pytest.mark.parametrize(
    ("experiment", "dc", "avoid"),
    [
        ("kill-dc", "dc-a", ["dc-a"]),
        ("isolate-dc", "dc-b", ["dc-b"]),
        ("isolate-then-power-loss", "dc-a", ["dc-b", "dc-a"]),  # dc-b is cut: its client with it
        ("isolate-then-kill", "dc-b", ["dc-a", "dc-b"]),
    ],
)
def test_the_plan_keeps_observers_out_of_the_dcs_it_cuts_first(tmp_path, experiment, dc, avoid):
    """plan.json's observers_avoid: the DCs the experiment's isolate-dc actions cut, then its
    target; the activities read it back and refuse a DC the stack does not have."""
    from dcdrill import drill
    from dcdrill import drill_settings as settings
    from dcdrill.chaos import context

    stack = "local-power-loss" if "power-loss" in experiment else "local"
    args = drill_args(stack=stack, experiment=experiment, dc=dc)
    plan = drill.Plan(args)
    assert plan.problems == []
    written = drill.resolved_plan(args, plan, settings.given(args), plan.variables, tmp_path)
    assert written.configuration.observers_avoid == avoid
    configuration = {"stack": stack, "run_dir": str(tmp_path), **written.as_json()["configuration"]}
    assert context.observers_avoid(configuration) == tuple(avoid)
    assert context.observers_avoid({"stack": stack, "run_dir": str(tmp_path), "dc": "dc-a"}) == ("dc-a",)
    with pytest.raises(ValueError, match="unknown DC 'dc-z'"):
        context.observers_avoid({**configuration, "observers_avoid": ["dc-z"]})


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


@pytest.mark.parametrize(
    ("client", "idempotence", "read"),
    [("java", None, ("java", None)), ("java", "off", ("java", False)), ("kafka-python", "on", ("kafka-python", True))],
)
def test_the_plan_carries_the_producer_client_to_the_activities(tmp_path, client, idempotence, read):
    from dcdrill import drill
    from dcdrill import drill_settings as settings
    from dcdrill.chaos import context

    args = drill_args(client=client, idempotence=idempotence)
    plan = drill.Plan(args)
    written = drill.resolved_plan(args, plan, settings.given(args), plan.variables, tmp_path)
    assert context.producer_client(written.as_json()["configuration"]) == read
    with pytest.raises(ValueError, match="configuration.client"):
        context.producer_client({"client": "rust"})
