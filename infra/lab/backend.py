"""The lab backend: every host a network namespace on this machine, DCs joined by a router
namespace (infra/lab/netns.py), hosts reached by SSH like any machine (infra/lab/sshd.py)."""
from __future__ import annotations

from dataclasses import dataclass

from infra.backend import Backend
from infra.constants import cache_dir
from infra.inventory import Inventory
from infra.rules import Violation
from infra.topology import Topology

# Only for lab stacks, whose Pulumi state never leaves this machine.
LAB_PASSPHRASE = "dcdrill-local-lab"


@dataclass(frozen=True)
class LabSettings:
    """`dcdrill:lab`, documented in README ("Stack config reference"): the lab's knobs."""

    latency_ms: float = 5.0  # one-way inter-DC latency (netem, where the kernel has it)
    jitter_ms: float = 0.0
    subnet_prefix: str = "10.77"  # the lab's /16: P.0.0/16, routed only inside the lab
    broker_heap_mb: int = 384
    zookeeper_heap_mb: int = 96

    @classmethod
    def from_config(cls, config: dict) -> LabSettings:
        raw = config.get("dcdrill:lab") or {}
        d = cls()
        return cls(latency_ms=float(raw.get("latencyMs", d.latency_ms)),
                   jitter_ms=float(raw.get("jitterMs", d.jitter_ms)),
                   subnet_prefix=str(raw.get("subnetPrefix", d.subnet_prefix)),
                   broker_heap_mb=int(raw.get("brokerHeapMb", d.broker_heap_mb)),
                   zookeeper_heap_mb=int(raw.get("zookeeperHeapMb", d.zookeeper_heap_mb)))


class LabBackend(Backend):
    name = "local"
    default_domain = "lab"

    def __init__(self, config: dict):
        self.settings = LabSettings.from_config(config)

    def check(self, t: Topology) -> list[Violation]:
        return []

    def inventory(self, t: Topology) -> Inventory:
        from infra.lab import layout

        return layout.build_inventory(t, self.settings, cache_dir())

    def program(self, t: Topology):
        from infra.lab import program

        return program.build(t, self.settings, cache_dir())

    def require_support(self) -> None:
        from infra.lab import netns

        netns.require_support()

    def leftovers(self) -> list[str]:
        from infra.lab import netns

        return [f"namespace {ns}" for ns in netns.lab_namespaces()]

    def passphrase(self) -> str | None:
        return LAB_PASSPHRASE
