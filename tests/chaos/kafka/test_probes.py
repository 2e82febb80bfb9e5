"""The steady-state hypothesis's cluster probes read the cluster once between them; waits read it
afresh every time."""

from __future__ import annotations

import pytest

from dcdrill.chaos import context, session
from dcdrill.chaos.kafka import probes
from dcdrill.infra.observe import status as cluster


def _counting(monkeypatch) -> list[int]:
    reads: list[int] = []

    def read(inventory, avoid_dcs=()):
        reads.append(1)
        return {
            "offline_partitions": 0,
            "under_replicated_partitions": len(reads),
            "off_preferred_leader": 0,
            "quorum": {"quorum": True},
            "brokers": [],
            "partitions": [],
        }

    monkeypatch.setattr(cluster, "cluster_status", read)
    monkeypatch.setattr(context, "inventory", lambda configuration: None)
    return reads


def test_the_hypothesis_probes_share_one_read(monkeypatch, tmp_path):
    reads = _counting(monkeypatch)
    cfg = {"stack": "local", "run_dir": str(tmp_path)}
    assert probes.offline_partitions(configuration=cfg) == 0
    assert probes.under_replicated_partitions(configuration=cfg) == 1  # the first probe's read
    assert probes.coordination_quorum(configuration=cfg) is True
    assert len(reads) == 1
    # Another drill target's side of the cluster is another read.
    probes.offline_partitions(configuration={**cfg, "dc": "dc-a"})
    assert len(reads) == 2
    # Another drill's probes share nothing with this one's, nor does a probe run with no drill.
    probes.offline_partitions(configuration={"stack": "local", "run_dir": str(tmp_path / "other")})
    probes.offline_partitions(configuration={"stack": "local"})
    probes.offline_partitions(configuration={"stack": "local"})
    assert len(reads) == 5


def test_a_read_older_than_the_share_and_every_wait_read_afresh(monkeypatch, tmp_path):
    reads = _counting(monkeypatch)
    cfg = {"stack": "local", "run_dir": str(tmp_path)}
    probes.offline_partitions(configuration=cfg)
    kept = session.of(cfg).statuses
    [key] = kept
    kept[key] = (kept[key][0] - probes.HYPOTHESIS_SHARE_S - 1, kept[key][1])
    assert probes.under_replicated_partitions(configuration=cfg) == 2
    assert (
        probes.partitions_off_preferred_leader(configuration=cfg) == 0 and len(reads) == 3
    )  # not the hypothesis's: afresh


def _partition(name: str, leader_dc: str, isr_dcs: list[str], replica_dcs=("dc-a", "dc-a", "dc-b", "dc-b")) -> dict:
    return {"topic": name, "partition": 0, "leader_dc": leader_dc, "isr_dcs": isr_dcs, "replica_dcs": list(replica_dcs)}


def test_the_shrink_wait_holds_until_every_dc_a_partition_is_led_and_in_sync_only_there(monkeypatch):
    shrunk = _partition("t", "dc-a", ["dc-a", "dc-a"])
    elsewhere = _partition("only-b", "dc-b", ["dc-b"], replica_dcs=("dc-b",))  # no replica in dc-a: not waited on
    seen = [
        {"partitions": [_partition("t", "dc-b", ["dc-b", "dc-a", "dc-a"]), elsewhere]},  # dc-b still leads
        {"partitions": [_partition("t", "dc-a", ["dc-a", "dc-a", "dc-b"]), elsewhere]},  # dc-b still in sync
        {"partitions": [shrunk, elsewhere]},
    ]
    monkeypatch.setattr(probes, "cluster_now", lambda configuration: seen.pop(0))
    monkeypatch.setattr(probes.time, "sleep", lambda s: None)
    out = probes.wait_shrunk_into("dc-a", then_s=10, configuration={})
    assert not seen and out["then_s"] == 10.0 and out["condition"] == "every ISR shrunk into dc-a"


def test_a_shrink_that_never_comes_names_the_partitions_left(monkeypatch):
    status = {"partitions": [_partition("t", "dc-b", ["dc-b", "dc-a"])], "brokers": [], "quorum": {}}
    monkeypatch.setattr(probes, "cluster_now", lambda configuration: status)
    monkeypatch.setattr(probes.status_text, "render", lambda st: "(status)")
    with pytest.raises(TimeoutError) as raised:
        probes.wait_shrunk_into("dc-a", timeout_s=0, configuration={})
    assert "not yet shrunk into dc-a: 1 partition(s): t-0 (leader in dc-b, ISR in ['dc-a', 'dc-b'])" in str(
        raised.value
    )
