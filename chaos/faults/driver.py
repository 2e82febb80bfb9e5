"""The fault driver protocol (Jepsen's nemesis): one backend's way to break things and to put
them back. The Chaos Toolkit actions (chaos/faults/actions.py) are the same on every backend;
they record each fault in the drill record and call the stack's driver.

A driver notes what heal must undo in an `Undo` as it goes, before each change, so a fault that
fails halfway is still healed exactly: heal calls `undo()` with what was noted, and nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from dcdrill.infra.backend import Backend
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.inventory import Inventory, InventoryHost
from dcdrill.infra.topology import Topology

DIRECTIONS = ("both", "ingress", "egress")  # ingress: traffic into the DC; egress: out of it
FAULT_LIMIT_S = 1800.0  # a fault's limit when the experiment names no hold (a plain `chaos run`)
HEAL_GRACE_S = 300.0  # beyond the hold: the drill's heal comes first, even on a slow runner


def mirror_log_files(data_root: str) -> list[str]:
    """Where roles/kafka_mirror logs on a host (kafka_mirror_dir under data_root), log4j2's rolled
    files first: oldest to newest."""
    log = f"{data_root}/mirror/mirror.log"
    return [f"{log}.2", f"{log}.1", log]


class Undo:
    """What heal must undo for one fault, kept in the drill record's fault state (`save` writes it
    there at once). Lists grow with `add`; other values are set."""

    def __init__(self, save=None):
        self.data: dict = {}
        self._save = save or (lambda data: None)

    def add(self, **items) -> None:
        for key, value in items.items():
            if isinstance(value, list):
                self.data.setdefault(key, []).extend(value)
            else:
                self.data[key] = value
        self._save(self.data)


class FaultDriver(ABC):
    """Every fault, with the same parameters on every backend. Targets are DCs of the topology
    and hosts of the inventory; a driver acts on exactly the hosts and networks its own stack
    created (the inventory the stack exported), never on whatever merely looks like them."""

    def __init__(self, topology: Topology | Deployment, inventory: Inventory, backend: Backend):
        """`topology`: the cluster, or a replicated stack's whole Deployment (its DCs and hosts);
        `inventory`: every host the faults may touch (on a replicated stack, every cluster's and
        MirrorMaker 2's: infra.inventory.merged)."""
        self.topology, self.inventory, self.backend = topology, inventory, backend
        self.credentials: dict = {}  # the experiment's `aws` secrets, when given (chaos.faults.actions.driver)
        # How long a fault may last if heal never comes: a backend that can (AWS, through FIS)
        # undoes it by itself after that. chaos.faults.actions.driver sets it from the drill's hold.
        self.fault_limit_s: float = FAULT_LIMIT_S

    @abstractmethod
    def kill_dc(self, dc: str, undo: Undo) -> dict:
        """Every broker and coordination node of the DC dies at once (SIGKILL: the machines keep
        their page caches, so what the processes wrote survives; `power_loss` takes it)."""

    def power_loss(self, dc: str, undo: Undo) -> dict:
        """A real power loss of the DC: its processes die at once, and every write its hosts' disks
        had not made durable is lost. A backend whose hosts cannot lose power leaves this out."""
        raise NotImplementedError(f"{type(self).__name__} cannot cut a DC's power")

    @abstractmethod
    def stop_dc(self, dc: str, undo: Undo) -> dict:
        """Clean shutdown of every broker and coordination node of the DC, brokers first."""

    @abstractmethod
    def isolate_dc(self, dc: str, direction: str, undo: Undo) -> dict:
        """Cut the DC off from the others: `both` directions, or only `ingress` / `egress`."""

    @abstractmethod
    def degrade_link(
        self, dc: str, other_dc: str, latency_ms: float, jitter_ms: float, loss_pct: float, undo: Undo
    ) -> dict:
        """Latency, jitter and packet loss between two DCs, both directions."""

    def kill_mirror(self, host: InventoryHost, undo: Undo) -> dict:
        """SIGKILL one MirrorMaker 2 node of a replicated stack (heal starts it again). A backend
        without replicated stacks leaves this out, and `dcdrill drill --check` says so."""
        raise NotImplementedError(f"{type(self).__name__} cannot kill MirrorMaker 2")

    def mirror_log(self, host: InventoryHost, needles: list[str]) -> list[str]:
        """The lines of one MirrorMaker 2 node's log (rolled files first) holding any of `needles`:
        how a drill learns MM2's restarts and rebalances (chaos/mirror/events.py)."""
        raise NotImplementedError(f"{type(self).__name__} cannot read MirrorMaker 2's log")

    @abstractmethod
    def restart_broker(self, host: InventoryHost) -> None:
        """Stop one broker cleanly and start it again (a step of a rolling restart)."""

    @abstractmethod
    def undo(self, undo: dict) -> None:
        """Put back what one fault changed, as its Undo noted it (heal calls it once per fault)."""

    @abstractmethod
    def undo_problems(self, undo: dict) -> list[str]:
        """What in `undo` (read back from a record, so input) this stack does not define: a service,
        disk, DC, region or instance that is not the stack's. Heal runs no undo while any has one."""

    @staticmethod
    def check_direction(direction: str) -> None:
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r}")
