"""The steady-state hypothesis's cluster probes read the cluster once between them; waits read it
afresh every time."""

from __future__ import annotations

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
