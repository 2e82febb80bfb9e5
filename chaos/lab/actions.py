"""Lab faults. Each appends to faults.jsonl and to the fault state; `heal_dc` undoes exactly the
recorded faults through the same service mechanism the Ansible roles set up."""
from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from chaos import drill
from infra import stack as stacks
from infra.lab import layout, netns, service

__all__ = ["kill_dc", "stop_dc", "isolate_dc", "degrade_link", "kill_tiebreaker", "heal_dc", "rolling_restart"]


def _spec_path(role: str, hv: dict) -> str:
    sub = "zookeeper" if role == "zookeeper" else "kafka"
    return str(Path(hv["data_root"]) / sub / f"{sub}.json")


def _signal_dc(dc: str, sig: int, fault: str, configuration: dict) -> dict:
    drill.check_dc(configuration, dc)
    inv = drill.inventory(configuration)
    targets = drill.hosts_in_dc(inv, dc)
    if not targets:
        raise ValueError(f"{dc} runs no Kafka or ZooKeeper process")
    specs = [(name, _spec_path(role, hv), hv["netns"]) for role, name, hv in targets]
    entry = drill.record_start(configuration, fault, dc, {"restart": specs}, isr=drill.isr_snapshot(configuration))
    # Brokers first for a clean stop (ZooKeeper must be there for controlled shutdown); all at once for a kill.
    order = specs if sig == signal.SIGKILL else list(reversed(specs))
    for _, spec, _ in order:
        service.stop(service.load(spec), sig, timeout_s=5 if sig == signal.SIGKILL else 60)
    still = [name for name, spec, _ in specs if service.running_pid(service.load(spec))]
    if still:
        raise RuntimeError(f"{fault} {dc}: still running after the fault: {', '.join(still)}")
    return {**entry, "hosts": [name for name, _, _ in specs]}


def kill_dc(dc: str, configuration: dict = None, secrets: dict = None) -> dict:
    """Power loss: SIGKILL every Kafka and ZooKeeper process of the DC."""
    return _signal_dc(dc, signal.SIGKILL, "kill-dc", configuration)


def stop_dc(dc: str, configuration: dict = None, secrets: dict = None) -> dict:
    """Clean shutdown of every Kafka and ZooKeeper process of the DC (SIGTERM, brokers first)."""
    return _signal_dc(dc, signal.SIGTERM, "stop-dc", configuration)


def kill_tiebreaker(configuration: dict = None, secrets: dict = None) -> dict:
    """Kill the DC that holds ZooKeeper nodes but no brokers."""
    t = drill.topology(configuration)
    tie = [dc.name for dc in t.datacenters if dc.brokers == 0 and dc.zookeepers > 0]
    if not tie:
        raise ValueError(f"stack {drill.stack_name(configuration)} has no tiebreaker DC (ZooKeeper without brokers)")
    return _signal_dc(tie[0], signal.SIGKILL, "kill-tiebreaker", configuration)


def isolate_dc(dc: str, direction: str = "both", configuration: dict = None, secrets: dict = None) -> dict:
    """Cut the DC off at the router: both directions, or only `ingress` (into the DC) / `egress`."""
    drill.check_dc(configuration, dc)
    index = layout.dc_index(drill.topology(configuration), dc)
    entry = drill.record_start(configuration, "isolate-dc", dc, {"isolation": index},
                               isr=drill.isr_snapshot(configuration))
    netns.isolate_dc(index, direction)
    if not netns.is_isolated(index):
        raise RuntimeError(f"isolate-dc {dc}: the router shows no isolation rule")
    return {**entry, "direction": direction}


def degrade_link(dc: str, other_dc: str, latency_ms: float = 0, jitter_ms: float = 0, loss_pct: float = 0,
                 configuration: dict = None, secrets: dict = None) -> dict:
    """Latency / jitter (netem, where the kernel has it) and packet loss (iptables) between two DCs."""
    t = drill.topology(configuration)
    for d in (dc, other_dc):
        drill.check_dc(configuration, d)
    a, b = layout.dc_index(t, dc), layout.dc_index(t, other_dc)
    undo = {"loss": [a, b, loss_pct] if loss_pct else None,
            "latency": [[dc, a], [other_dc, b]] if (latency_ms or jitter_ms) else None}
    entry = drill.record_start(configuration, "degrade-link", f"{dc}<->{other_dc}", undo)
    if latency_ms or jitter_ms:
        for d, i in ((dc, a), (other_dc, b)):
            if not netns.set_link_latency(d, i, latency_ms, jitter_ms):
                raise RuntimeError("degrade-link: this kernel has no sch_netem (CONFIG_NET_SCH_NETEM unset): "
                                   "latency and jitter cannot be injected; packet loss can")
    if loss_pct:
        _loss_rules(a, b, loss_pct, "-I")
    return entry


def _loss_rules(a: int, b: int, loss_pct: float, op: str) -> None:
    for i, o in ((a, b), (b, a)):
        netns.sh("iptables", op, "FORWARD", "-i", netns.router_dev(i), "-o", netns.router_dev(o), "-m", "statistic",
                 "--mode", "random", "--probability", f"{loss_pct / 100:.4f}", "-j", "DROP", ns=netns.ROUTER,
                 check=op == "-I")


def heal_dc(dc: str = None, configuration: dict = None, secrets: dict = None) -> dict:
    """Undo every recorded fault (of `dc`, or all): restart killed services with the lab service
    mechanism, lift isolation, restore links. Idempotent: safe as a rollback and on SIGINT."""
    return drill.heal(configuration, dc, _undo)


def _start_service(name: str, spec: str, ns: str) -> None:
    """Start a service inside its host's namespace with the supervisor the Ansible roles use."""
    res = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-m", "infra.lab.service", "start", spec],
                         capture_output=True, text=True, cwd=str(Path(__file__).resolve().parents[2]))
    if res.returncode != 0:
        raise RuntimeError(f"restart {name}: {res.stderr.strip() or res.stdout.strip()}")


def _undo(undo: dict, configuration: dict) -> None:
    for name, spec, ns in undo.get("restart") or []:
        _start_service(name, spec, ns)
    if undo.get("isolation"):
        netns.heal_isolation(undo["isolation"])
    if undo.get("loss"):
        a, b, pct = undo["loss"]
        _loss_rules(a, b, pct, "-D")
    for d, i in undo.get("latency") or []:  # back to the stack's configured latency
        settings = stacks.lab_settings(stacks.load_config(drill.stack_name(configuration)))
        netns.set_link_latency(d, i, settings["latency_ms"], settings["jitter_ms"])


def rolling_restart(wait_timeout_s: float = 180, configuration: dict = None, secrets: dict = None) -> dict:
    """Restart brokers one at a time, waiting for zero under-replicated partitions in between."""
    from chaos.kafka.probes import wait_converged

    inv = drill.inventory(configuration)
    restarted = []
    entry = drill.record_start(configuration, "rolling-restart", "all-brokers", {})
    for name, hv in sorted(inv["all"]["children"]["kafka_broker"]["hosts"].items()):
        spec_path = _spec_path("kafka_broker", hv)
        service.stop(service.load(spec_path), signal.SIGTERM)
        _start_service(name, spec_path, hv["netns"])
        wait_converged(timeout_s=wait_timeout_s, configuration=configuration)
        restarted.append(name)
    with drill.fault_state(configuration) as state:
        state["active"] = [a for a in state["active"] if a["fault"] != "rolling-restart"]
    drill.record_end(configuration, entry)
    return {"restarted": restarted}
