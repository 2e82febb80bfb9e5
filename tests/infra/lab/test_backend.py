"""The lab backend (infra/lab/backend.py), offline: what it cannot inject says how to make it able,
and the fault-state copies it keeps outside a record come back only while a fault is active."""

import pytest

from dcdrill.infra import stack


def test_a_power_loss_needs_the_stacks_power_loss_disks_and_says_so():
    assert stack.backend("local-power-loss").cannot("power_loss") is None
    why = stack.backend("local").cannot("power_loss")
    assert "`powerLoss: true`" in why and "dcdrill lab up" in why
    assert stack.backend("local").cannot("kill_dc") is None


def test_kept_fault_states_come_back_while_active_and_go_when_healed(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_STATE", str(tmp_path / "state"))
    lab = stack.backend("local")
    inventory = lab.inventory(stack.load("local"))  # as planned, offline
    lab.keep_fault_state(inventory, "drill-1", {"active": [{"fault": "kill-dc"}]})
    lab.keep_fault_state(inventory, "drill-2", {"active": []})  # nothing left to heal: no copy
    assert lab.kept_fault_states(inventory) == {"drill-1": {"active": [{"fault": "kill-dc"}]}}
    lab.keep_fault_state(inventory, "drill-1", {"active": []})
    assert lab.kept_fault_states(inventory) == {}


def test_a_garbled_copy_is_named():
    backend = stack.backend("local")
    with pytest.raises(ValueError, match="the fault-state copy k.json is not JSON"):
        backend.parse_kept("k.json", b"{")
    with pytest.raises(ValueError, match="the fault-state copy k.json is not a JSON object"):
        backend.parse_kept("k.json", b"[1]")
