"""The shipped Chaos Toolkit experiments: composed from one shape, valid, and checked against each
stack's backend before anything starts (`dcdrill drill --check`)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dcdrill import chaos
from dcdrill.chaos import experiment
from dcdrill.chaos.faults import DRIVERS
from dcdrill.chaos.faults.driver import FaultDriver
from dcdrill.infra import rules, stack

CHAOS = str(Path(sys.executable).parent / "chaos")
DCDRILL = [sys.executable, "-m", "dcdrill.cli"]
SHIPPED = [
    "cut-mirror-link",
    "isolate-dc",
    "isolate-then-kill",
    "isolate-then-power-loss",
    "isolate-then-stop",
    "kill-dc",
    "kill-mirror",
    "kill-source-dc",
    "power-loss",
    "rolling-restart",
    "slow-link",
    "stop-dc",
    "tiebreaker-loss",
]


@pytest.mark.parametrize("name", SHIPPED)
def test_composed_experiment_is_valid_and_heals_always(name, tmp_path):
    assert experiment.names() == SHIPPED
    e = experiment.compose(name)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(e))
    res = subprocess.run(
        [CHAOS, "--no-version-check", "--log-file", str(tmp_path / "chaos.log"), "validate", str(path)],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert e["runtime"]["rollbacks"]["strategy"] == "always"
    assert [a["provider"]["func"] for a in e["rollbacks"]][:1] == ["heal"]
    method = [a["name"] for a in e["method"]]
    # Every drill starts from preferred leaders, logs the coordination from before the fault to
    # convergence, and leaves no topic behind once audited.
    assert method[:4] == ["balance-leaders", "start-workload", "watch-coordination", "workload-settled"]
    tail = ["wait-converged", "stop-watching-coordination", "stop-workload", "final-audit", "delete-topic"]
    if name in REPLICATED_ONLY:  # then MM2's starts and rebalances, read from its log
        tail = tail[1:] + ["record-mirror-events"]
    assert method[-5:] == tail
    assert "stop-watching-coordination" in [a["name"] for a in e["rollbacks"]]
    assert e["configuration"]["keep_topic"] is False
    assert {p["name"] for p in e["steady-state-hypothesis"]["probes"]} >= {
        "no-offline-partitions",
        "coordination-quorum",
        "workload-progressing",
    }
    faults = experiment.fault_activities({"method": e["method"]})
    assert faults and all(a["provider"]["module"] == "dcdrill.chaos.faults.actions" for a in faults)
    # A fault file holds only what differs: a few lines, not a copy of the drill.
    assert len((experiment.FOLDER / f"{name}.json").read_text().splitlines()) < 60


def test_a_new_fault_is_a_short_file(tmp_path, monkeypatch):
    (tmp_path / "_drill.json").write_text(experiment.SHAPE.read_text())
    (tmp_path / "egress-cut.json").write_text(
        json.dumps(
            {
                "title": "t",
                "description": "d",
                "configuration": {"dc": "dc-b"},
                "fault": [
                    {
                        "type": "action",
                        "name": "cut",
                        "provider": {
                            "type": "python",
                            "module": "dcdrill.chaos.faults.actions",
                            "func": "isolate_dc",
                            "arguments": {"dc": "${dc}", "direction": "egress"},
                        },
                    }
                ],
            }
        )
    )
    monkeypatch.setattr(experiment, "FOLDER", tmp_path)
    monkeypatch.setattr(experiment, "SHAPE", tmp_path / "_drill.json")
    e = experiment.compose("egress-cut")
    names = [a["name"] for a in e["method"]]
    assert names.index("cut") == names.index("latency-settled") + 1 and e["configuration"]["dc"] == "dc-b"
    assert experiment.preflight(e, stack.load("local"), stack.backend("local"), {}) == []


def test_every_fault_has_the_same_parameters_on_every_driver():
    import inspect

    for name in ("kill_dc", "stop_dc", "power_loss", "isolate_dc", "degrade_link", "restart_broker", "undo"):
        base = inspect.signature(getattr(FaultDriver, name))
        for cls in DRIVERS.values():
            assert inspect.signature(getattr(cls, name)).parameters.keys() <= base.parameters.keys() | {"timeout_s"}
            assert not getattr(getattr(cls, name), "__isabstractmethod__", False), (cls, name)


REPLICATED_ONLY = {"cut-mirror-link", "kill-mirror", "kill-source-dc"}


@pytest.mark.parametrize(
    "stack_name",
    [
        "local",
        "local-3dc",
        "local-availability",
        "local-power-loss",
        "aws-3az",
        "aws-3az-tiebreaker",
        "aws-2region-tiebreaker",
        "local-replicated",
        "local-replicated-aa",
    ],
)
def test_check_passes_every_shipped_experiment_where_it_applies(stack_name, aws_control, monkeypatch, capsys):
    """In this process (the CLI's `main`, as the console script calls it): 13 checks a stack."""
    from dcdrill import cli

    for key, value in aws_control.items():
        monkeypatch.setenv(key, value)
    tie = bool(rules.tiebreakers(stack.load(stack_name)))
    replicated = stack.load_deployment(stack_name).replicated
    powerless = stack.backend(stack_name).cannot("power_loss")
    for name in SHIPPED:
        code = cli.main(["drill", "--stack", stack_name, "--experiment", name, "--check"])
        out, err = capsys.readouterr()
        res = subprocess.CompletedProcess([], code, out, err)
        if name == "tiebreaker-loss" and not tie:
            assert res.returncode == 2 and "the stack has no tiebreaker DC" in res.stderr, res.stderr
        elif name in REPLICATED_ONLY and not replicated:
            assert res.returncode == 2 and "drills a replicated stack" in res.stderr, res.stderr
        elif name in ("power-loss", "isolate-then-power-loss") and powerless:
            assert res.returncode == 2 and "`powerLoss: true`" in res.stderr, res.stderr
        else:
            assert res.returncode == 0, (name, res.stdout + res.stderr)
            assert f"can run on stack {stack_name}" in res.stdout


def test_check_names_what_is_wrong_and_starts_nothing(tmp_path):
    for args, needle in (
        (["--experiment", "nope"], "unknown experiment 'nope'; valid: cut-mirror-link, isolate-dc"),
        (["--dc", "dc-z"], "dc 'dc-z' is not a DC of the stack; valid: dc-a, dc-b, dc-c"),
        (["--acks", "1"], "[consistency-acks]"),
        (["--stack", "nope"], "unknown stack 'nope'"),
    ):
        res = subprocess.run(
            DCDRILL + ["drill", "--stack", "local", *args, "--check"],  # a later --stack wins
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert res.returncode == 2 and needle in res.stderr, (args, res.stderr)


def test_a_fault_a_backend_lacks_is_refused_naming_both(monkeypatch):
    from dcdrill.chaos.faults.lab import LabFaults

    class NoIsolation(LabFaults):
        isolate_dc = FaultDriver.isolate_dc  # abstract again: this lab cannot cut a DC off

    monkeypatch.setitem(DRIVERS, "local", NoIsolation)
    problems = experiment.preflight(experiment.compose("isolate-dc"), stack.load("local"), stack.backend("local"), {})
    assert problems == ["fault 'isolate_dc' does not exist on the local backend's driver (NoIsolation)"]


def test_experiment_command_prints_what_chaos_run_takes():
    res = subprocess.run(DCDRILL + ["experiment", "kill-dc"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and json.loads(res.stdout) == experiment.compose("kill-dc")


def _activities(exp: dict) -> list[dict]:
    steady = exp.get("steady-state-hypothesis", {}).get("probes", [])
    return [a for a in steady + exp.get("method", []) + exp.get("rollbacks", []) if "provider" in a]


def test_discover_lists_every_action_and_probe():
    """Found by walking the package: the mirror target's modules too (the replicated experiments'),
    and every module any shipped experiment names."""
    assert chaos.activity_modules() == {
        "action": [f"dcdrill.chaos.{t}.actions" for t in ("faults", "kafka", "mirror", "workload")],
        "probe": [f"dcdrill.chaos.{t}.probes" for t in ("kafka", "mirror", "workload")],
    }
    used = {p["provider"]["module"] for name in experiment.names() for p in _activities(experiment.compose(name))}
    assert used <= {m for ms in chaos.activity_modules().values() for m in ms}, used
    names = {a["name"] for a in chaos.discover()["activities"]}
    assert {
        "kill_dc",
        "stop_dc",
        "isolate_dc",
        "degrade_link",
        "kill_tiebreaker",
        "heal",
        "rolling_restart",
        "offline_partitions",
        "under_replicated_partitions",
        "isr_per_dc",
        "controller_present",
        "coordination_quorum",
        "wait_converged",
        "wait_leaders",
        "wait_shrunk_into",
        "workload_progressing",
        "elect_preferred_leaders",
        "partitions_off_preferred_leader",
        "delete_topic",
    } <= names


def test_a_power_loss_of_the_quorums_dc_needs_its_risk_accepted():
    from dataclasses import replace

    t = stack.load("local-kraft-misplaced")  # dc-a holds 2 of the 3 controllers; the risk is accepted
    backend = stack.backend("local-kraft-misplaced")
    backend.cannot = lambda fault: None  # as with powerLoss: true
    e = experiment.compose("power-loss")
    assert experiment.preflight(e, t, backend, {"dc": "dc-a"}) == []
    [problem] = experiment.preflight(e, replace(t, accept_risks=()), backend, {"dc": "dc-a"})
    assert "a power loss of dc-a takes the controllers' majority with it" in problem
    assert "list quorum-dc-loss in dcdrill:acceptRisks" in problem
    assert experiment.preflight(e, replace(t, accept_risks=()), backend, {"dc": "dc-b"}) == []
