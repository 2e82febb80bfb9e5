"""The lab's fault driver: processes are signalled through the lab's service supervisor (the one
the Ansible roles start them with), networks are cut and degraded at the router namespace."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from chaos.faults.driver import FaultDriver, Undo
from infra.constants import ROOT
from infra.inventory import InventoryHost
from infra.lab import layout, netns, service


def spec_path(host: InventoryHost) -> str:
    """The service spec the role rendered on the host (roles/jvm_service)."""
    sub = "zookeeper" if host.role == "zookeeper" else "kafka"
    return str(Path(host.vars["data_root"]) / sub / f"{sub}.json")


def start_service(name: str, spec: str, ns: str) -> None:
    """Start a service inside its host's namespace with the supervisor the Ansible roles use."""
    res = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "infra.lab.service", "start", spec],
                         capture_output=True, text=True, cwd=str(ROOT))
    if res.returncode != 0:
        raise RuntimeError(f"restart {name}: {res.stderr.strip() or res.stdout.strip()}")


class LabFaults(FaultDriver):
    def _signal_dc(self, dc: str, sig: int, undo: Undo) -> dict:
        targets = self.inventory.in_dc(dc)
        if not targets:
            raise ValueError(f"{dc} runs no Kafka or ZooKeeper process")
        specs = [(h.name, spec_path(h), h.netns) for h in targets]
        undo.add(restart=[list(s) for s in specs])
        # Brokers first for a clean stop (ZooKeeper must be there for controlled shutdown); all at once for a kill.
        order = specs if sig == signal.SIGKILL else list(reversed(specs))
        for _, spec, _ in order:
            service.stop(service.load(spec), sig, timeout_s=5 if sig == signal.SIGKILL else 60)
        still = [name for name, spec, _ in specs if service.running_pid(service.load(spec))]
        if still:
            raise RuntimeError(f"still running after the fault: {', '.join(still)}")
        return {"hosts": [name for name, _, _ in specs]}

    def kill_dc(self, dc: str, undo: Undo) -> dict:
        return self._signal_dc(dc, signal.SIGKILL, undo)

    def stop_dc(self, dc: str, undo: Undo) -> dict:
        return self._signal_dc(dc, signal.SIGTERM, undo)

    def isolate_dc(self, dc: str, direction: str, undo: Undo) -> dict:
        self.check_direction(direction)
        index = layout.dc_index(self.topology, dc)
        undo.add(isolation=index)
        netns.isolate_dc(index, direction)
        if not netns.is_isolated(index):
            raise RuntimeError(f"the router shows no isolation rule for {dc}")
        return {"direction": direction}

    def degrade_link(self, dc: str, other_dc: str, latency_ms: float, jitter_ms: float, loss_pct: float,
                     undo: Undo) -> dict:
        a, b = layout.dc_index(self.topology, dc), layout.dc_index(self.topology, other_dc)
        if latency_ms or jitter_ms:
            undo.add(latency=[[dc, a], [other_dc, b]])
            for d, i in ((dc, a), (other_dc, b)):
                if not netns.set_link_latency(d, i, latency_ms, jitter_ms):
                    raise RuntimeError("this kernel has no sch_netem (CONFIG_NET_SCH_NETEM unset): latency and "
                                       "jitter cannot be injected in the lab; packet loss can")
        if loss_pct:
            undo.add(loss=[a, b, loss_pct])
            _loss_rules(a, b, loss_pct, "-I")
        return {"latency_ms": latency_ms, "jitter_ms": jitter_ms, "loss_pct": loss_pct}

    def restart_broker(self, host: InventoryHost) -> None:
        spec = spec_path(host)
        service.stop(service.load(spec), signal.SIGTERM)
        start_service(host.name, spec, host.netns)

    def undo(self, undo: dict) -> None:
        for name, spec, ns in undo.get("restart") or []:
            start_service(name, spec, ns)
        if undo.get("isolation"):
            netns.heal_isolation(undo["isolation"])
        if undo.get("loss"):
            a, b, pct = undo["loss"]
            _loss_rules(a, b, pct, "-D")
        settings = self.backend.settings  # infra.lab.backend.LabSettings
        for d, i in undo.get("latency") or []:  # back to the stack's configured latency
            netns.set_link_latency(d, i, settings.latency_ms, settings.jitter_ms)


def _loss_rules(a: int, b: int, loss_pct: float, op: str) -> None:
    for i, o in ((a, b), (b, a)):
        netns.sh("iptables", op, "FORWARD", "-i", netns.router_dev(i), "-o", netns.router_dev(o), "-m", "statistic",
                 "--mode", "random", "--probability", f"{loss_pct / 100:.4f}", "-j", "DROP", ns=netns.ROUTER,
                 check=op == "-I")
