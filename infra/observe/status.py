"""`dcdrill status`, the control's side: what the cluster looks like right now, asked of one of
its client hosts through host access (infra/observe/hostaccess.py), where an agent runs the probes
(infra/observe/host_probes.py). `healthy` judges what came back; status_text.py renders it.
"""

from __future__ import annotations

from collections.abc import Sequence

from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import hostaccess


def cluster_status(inventory: Inventory, timeout_s: float = 5.0, avoid_dcs: Sequence[str] = ()) -> dict:
    """The cluster's brokers, quorum and partitions, observed from a client host (outside
    `avoid_dcs` when it can: hostaccess.observers)."""
    return hostaccess.call(inventory, "cluster_status", {"timeout_s": timeout_s}, avoid_dcs)


def mirror_status(inventory: Inventory, via: Inventory, timeout_s: float = 2.0) -> list[dict]:
    """mirror_status_here of the MM2 hosts' inventory, run on a client host of `via` (a cluster of
    the stack: the MM2 inventory has no client hosts)."""
    return hostaccess.call(via, "mirror_status", {"mirrors": inventory.data, "timeout_s": timeout_s})


def healthy(status: dict) -> bool:
    return (
        all(b["alive"] for b in status["brokers"])
        and status["quorum"]["quorum"]
        and status["quorum"]["alive"] == status["quorum"]["total"]
        and status["offline_partitions"] == 0
        and status["under_replicated_partitions"] == 0
        and status["error"] is None
    )
