"""A wait for convergence that gives up names a follower truncation loop from the brokers' logs."""

from __future__ import annotations

import json

import pytest

from dcdrill.chaos import context
from dcdrill.chaos.kafka import probes
from dcdrill.infra.observe import hostaccess
from tests.infra.observe.test_broker_logs import _inventory, _status, fetcher_line


def test_the_timeout_names_the_loop_the_follower_s_log_shows(monkeypatch, tmp_path):
    status = {
        **_status(),
        "quorum": {"kind": "zookeeper", "alive": 3, "total": 3, "quorum": True, "nodes": []},
        "offline_partitions": 0,
        "under_replicated_partitions": 1,
        "off_preferred_leader": 0,
        "error": None,
        "controller": 1,
    }
    status["brokers"] = [{**b, "dc": "dc-a", "host": f"b{b['id']}"} for b in status["brokers"]]
    for p in status["partitions"]:
        p.update(leader_dc="dc-a", isr_dcs=["dc-a"] * len(p["isr"]))
    monkeypatch.setattr(probes, "cluster_now", lambda configuration: status)
    monkeypatch.setattr(context, "inventory", lambda configuration: _inventory())
    monkeypatch.setattr(hostaccess, "run", lambda *a, **k: "\n".join([fetcher_line(4, 1856)] * 400))
    with pytest.raises(TimeoutError) as raised:
        probes.wait_converged(timeout_s=0, configuration={"stack": "local", "run_dir": str(tmp_path)})
    assert "converged ISR not reached" in str(raised.value)
    assert "follower 1 (b1) truncated to offset 1856 400 times" in str(raised.value)
    assert "with broker 1 out of their ISR" in str(raised.value)  # and the cause, from the status
    kept = json.loads((tmp_path / "convergence.json").read_text())
    assert kept["loops"][0]["times"] == 400 and any("broker 1 out of their ISR" in c for c in kept["causes"])


def test_a_log_read_that_fails_leaves_the_timeout_as_the_error(monkeypatch):
    status = {
        "brokers": [],
        "partitions": [],
        "quorum": {"kind": "zookeeper", "alive": 2, "total": 3, "quorum": True, "nodes": []},
        "offline_partitions": 0,
        "under_replicated_partitions": 0,
        "off_preferred_leader": 0,
        "error": None,
    }
    monkeypatch.setattr(probes, "cluster_now", lambda configuration: status)

    def no_inventory(configuration):
        raise RuntimeError("no inventory")

    monkeypatch.setattr(context, "inventory", no_inventory)
    with pytest.raises(TimeoutError) as raised:
        probes.wait_converged(timeout_s=0, configuration={})
    assert "could not be read: RuntimeError: no inventory" in str(raised.value)
