"""The shipped Chaos Toolkit experiments are valid and follow the drill's shape."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import chaos
from chaos.cli import EXPERIMENTS, experiments

CHAOS = str(Path(sys.executable).parent / "chaos")


@pytest.mark.parametrize("name", ["kill-dc", "isolate-dc", "tiebreaker-loss", "slow-link", "rolling-restart"])
def test_experiment_is_valid_and_heals_always(name, tmp_path):
    assert name in experiments()
    path = EXPERIMENTS / f"{name}.json"
    res = subprocess.run([CHAOS, "--no-version-check", "--log-file", str(tmp_path / "chaos.log"), "validate", str(path)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    e = json.loads(path.read_text())
    assert e["runtime"]["rollbacks"]["strategy"] == "always"
    method = [a["name"] for a in e["method"]]
    # Every drill starts from preferred leaders, and leaves no topic behind once audited.
    assert method[:2] == ["balance-leaders", "start-workload"]
    assert method[-3:] == ["stop-workload", "final-audit", "delete-topic"]
    assert e["configuration"]["keep_topic"] is False
    assert "wait-converged" in method  # a wait, not a pause, says "healed"
    assert {p["name"] for p in e["steady-state-hypothesis"]["probes"]} >= {
        "no-offline-partitions", "zookeeper-has-quorum", "workload-progressing"}


def test_discover_lists_every_action_and_probe():
    names = {a["name"] for a in chaos.discover()["activities"]}
    assert {"kill_dc", "stop_dc", "isolate_dc", "degrade_link", "kill_tiebreaker", "heal_dc", "rolling_restart",
            "offline_partitions", "under_replicated_partitions", "isr_per_dc", "controller_present",
            "zookeeper_quorum", "wait_converged", "wait_leaders", "workload_progressing", "elect_preferred_leaders",
            "partitions_off_preferred_leader", "delete_topic"} <= names
