"""The lab's fault driver: processes are signalled through the lab's service supervisor (the one
the Ansible roles start them with), networks are cut at the router namespace and degraded by the
lab's link shaper (infra/lab/shaper.py: netem, or the userspace forwarder)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from dcdrill.chaos.faults.driver import FaultDriver, Undo, mirror_log_files
from dcdrill.infra.constants import PACKAGE, now_ms, state_dir
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.inventory import InventoryHost
from dcdrill.infra.lab import disk, layout, netns, service, shaper
from dcdrill.infra.observe import hostaccess

SERVICE = {"zookeeper": "zookeeper", "kafka_mirror": "mirror"}  # the roles' service names; kafka otherwise
DC_LOSS_ROLES = (
    "zookeeper",
    "kafka_controller",
    "kafka_broker",
    "kafka_mirror",
)  # clients survive: they are the observers


UNDO_KEYS = ("restart", "killed_ms", "power", "isolation", "links")  # what this driver's faults note


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _items(undo: dict, key: str, problems: list[str]) -> list:
    """undo[key] as a list (none: []); anything else is a problem."""
    value = undo.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f"{key} {value!r}: not a list")
        return []
    return value


def spec_path(host: InventoryHost) -> str:
    """The service spec the role rendered on the host, in its root-owned folder (roles/jvm_service
    jvm_service_spec_dir)."""
    sub = SERVICE.get(host.role, "kafka")
    return str(Path(host.vars["data_root"]) / "services" / f"{sub}.json")


def start_service(name: str, spec: str, ns: str) -> None:
    """Start a service inside its host's namespace with the supervisor the Ansible roles use."""
    res = subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-m", "dcdrill.infra.lab.service", "start", spec],
        capture_output=True,
        text=True,
        cwd=str(PACKAGE.parent),
    )
    if res.returncode != 0:
        raise RuntimeError(f"restart {name}: {res.stderr.strip() or res.stdout.strip()}")


# The lab's ZooKeeper session timeout (roles/kafka_broker: 18 s) plus a margin.
SESSION_GRACE_MS = 30_000
# A broker started while its old ZooKeeper session lives exits once it has loaded its logs
# (NodeExists), seconds after its start, longer after a power loss's recovery.
RESTART_SETTLE_S = 20.0
# How long heal waits for the cluster to drop the killed brokers before it starts them anyway:
# the session timeout, plus a ZooKeeper leader election's fresh one when the leader died too.
DEREGISTER_WAIT_S = 45.0
# How long heal watches the restarted brokers until the cluster lists them, starting again any
# that exited: a broker exits at start while its old registration lives, and a quorum lost during
# the fault keeps it alive past the session timeout (its sessions cannot expire without a quorum,
# and the new leader gives each a fresh timeout), so no clock since the kill can say it is gone.
REGISTER_WAIT_S = 180.0


def restart(specs: list[list[str]], within_s: float = 90.0, settle_s: float = RESTART_SETTLE_S) -> None:
    """Start each service (name, spec, netns) again and see them all stay up `settle_s` after the
    last start, starting again any that exits. A broker SIGKILLed less than a ZooKeeper session
    ago exits at start (its ephemeral registration is still there: NodeExists) until that session
    expires; a heal must outlast it."""
    deadline = time.monotonic() + within_s
    last_start = None
    while True:
        down = [s for s in specs if not service.running_pid(service.load(s[1]))]
        if down and last_start is not None and time.monotonic() > deadline:
            raise RuntimeError(
                f"would not stay up within {within_s:.0f}s: {', '.join(n for n, _, _ in down)} "
                "(see each one's log under its host's folder)"
            )
        if down:
            for name, spec, ns in down:
                start_service(name, spec, ns)
            last_start = time.monotonic()
        elif last_start is None or time.monotonic() - last_start >= settle_s:
            return
        time.sleep(1.0)


class LabFaults(FaultDriver):
    def _signal_dc(self, dc: str, sig: int, undo: Undo) -> dict:
        targets = self.inventory.in_dc(dc, DC_LOSS_ROLES)
        if not targets:
            raise ValueError(f"{dc} runs no Kafka or ZooKeeper process")
        specs = [(h.name, spec_path(h), h.netns) for h in targets]
        undo.add(restart=[list(s) for s in specs], **({"killed_ms": now_ms()} if sig == signal.SIGKILL else {}))
        # Brokers first for a clean stop (ZooKeeper must be there for controlled shutdown); all at once for a kill.
        order = specs if sig == signal.SIGKILL else list(reversed(specs))
        acted = now_ms()  # the DC's loss begins at the first signal (a clean stop's first broker)
        for _, spec, _ in order:
            service.stop(service.load(spec), sig, timeout_s=5 if sig == signal.SIGKILL else 60)
        still = [name for name, spec, _ in specs if service.running_pid(service.load(spec))]
        if still:
            raise RuntimeError(f"still running after the fault: {', '.join(still)}")
        return {"hosts": [name for name, _, _ in specs], "acted_ms": acted}

    def kill_dc(self, dc: str, undo: Undo) -> dict:
        return self._signal_dc(dc, signal.SIGKILL, undo)

    def stop_dc(self, dc: str, undo: Undo) -> dict:
        return self._signal_dc(dc, signal.SIGTERM, undo)

    def power_loss(self, dc: str, undo: Undo) -> dict:
        """SIGKILL, then each host's disk drops what it had not made durable (infra/lab/disk.py)."""
        lab = layout.lab_dir(state_dir())
        roots = {h.name: Path(h.vars["data_root"]) for h in self.inventory.in_dc(dc, DC_LOSS_ROLES)}
        bare = [name for name, root in roots.items() if not disk.mounted(root)]
        if bare:
            raise RuntimeError(
                f"no power-loss disk under {', '.join(bare)}: "
                f"{self.backend.cannot('power_loss') or 'lab up rebuilds the hosts with one'}"
            )
        undo.add(power=sorted(root.name for root in roots.values()))  # before the cut: heal powers them on
        result = self._signal_dc(dc, signal.SIGKILL, undo)
        lost = {name: disk.cut(lab, root.name) for name, root in roots.items()}
        return {**result, "lost": lost, "bytes_lost": sum(v["bytes_lost"] for v in lost.values())}

    def isolate_dc(self, dc: str, direction: str, undo: Undo) -> dict:
        self.check_direction(direction)
        index = layout.dc_index(self.topology, dc)
        undo.add(isolation=index)
        netns.isolate_dc(index, direction)
        if not netns.is_isolated(index):
            raise RuntimeError(f"the router shows no isolation rule for {dc}")
        return {"direction": direction}

    def shaper(self) -> shaper.Shaper:
        return shaper.installed(layout.shaper_dir(state_dir()))

    def configured_links(self) -> shaper.LinkTable:
        return layout.link_table(self.topology, self.backend.settings)

    def degrade_link(
        self, dc: str, other_dc: str, latency_ms: float, jitter_ms: float, loss_pct: float, undo: Undo
    ) -> dict:
        a, b = layout.dc_index(self.topology, dc), layout.dc_index(self.topology, other_dc)
        links = self.shaper()
        undo.add(links=[[a, b]])
        table = links.current()
        shape = shaper.LinkShape(latency_ms, jitter_ms, loss_pct, table[(a, b)].rate_mbit)
        links.apply({**table, (a, b): shape, (b, a): shape})
        return {"latency_ms": latency_ms, "jitter_ms": jitter_ms, "loss_pct": loss_pct, "shaper": links.kind}

    def kill_mirror(self, host: InventoryHost, undo: Undo) -> dict:
        spec = spec_path(host)
        undo.add(restart=[[host.name, spec, host.netns]])
        service.stop(service.load(spec), signal.SIGKILL, timeout_s=5)
        if service.running_pid(service.load(spec)):
            raise RuntimeError(f"MirrorMaker 2 on {host.name} still running after SIGKILL")
        return {"hosts": [host.name]}

    def mirror_log(self, host: InventoryHost, needles: list[str]) -> list[str]:
        files = [Path(f) for f in mirror_log_files(host.vars["data_root"])]
        return [
            line
            for f in files
            if f.exists()
            for line in f.read_text(errors="replace").splitlines()
            if any(n in line for n in needles)
        ]

    def restart_broker(self, host: InventoryHost) -> None:
        spec = spec_path(host)
        service.stop(service.load(spec), signal.SIGTERM)
        start_service(host.name, spec, host.netns)

    def _settle_s(self, undo: dict) -> float:
        """How long the restarted services must be seen up. Only a broker killed less than a
        session ago can exit at start (its old registration is still there: NodeExists on
        ZooKeeper). Once the cluster no longer counts the killed brokers live, none can: they
        start at once and need no settle. If nobody says so in time, the settle catches it."""
        killed_ms = undo.get("killed_ms") or 0
        if now_ms() - killed_ms >= SESSION_GRACE_MS:
            return 0.0
        if isinstance(self.topology, Deployment):  # several clusters in one inventory: no one to ask
            return RESTART_SETTLE_S
        names = {name for name, _, _ in undo["restart"]}
        killed = [h for h in self.inventory.brokers if h.name in names]
        ids, dcs = {h.node_id for h in killed}, sorted({h.dc for h in killed})
        deadline = time.monotonic() + DEREGISTER_WAIT_S
        while ids and time.monotonic() < deadline:
            try:
                sample = hostaccess.call(self.inventory, "coordination_sample", {}, dcs, timeout_s=15)
            except Exception:  # noqa: BLE001 - an isolated or dead observer: the settle decides
                break
            if sample.get("answered") and not ids & set(sample.get("brokers") or []):
                return 0.0
            time.sleep(1.0)
        return RESTART_SETTLE_S if ids else 0.0

    def _until_registered(self, specs: list[list[str]], within_s: float = REGISTER_WAIT_S) -> bool:
        """Until every restarted broker is live (its port open, registered), starting again any that exited
        meanwhile; False (and the wait for convergence that follows names why) when that did not
        happen within `within_s`, or nobody could say."""
        if isinstance(self.topology, Deployment):  # several clusters in one inventory: no one to ask
            return False
        names = {name for name, _, _ in specs}
        brokers = [h for h in self.inventory.brokers if h.name in names]
        ids = {h.node_id for h in brokers}
        mine = [s for s in specs if s[0] in {h.name for h in brokers}]
        deadline = time.monotonic() + within_s
        while ids and time.monotonic() < deadline:
            for name, spec, ns in mine:
                if not service.running_pid(service.load(spec)):
                    start_service(name, spec, ns)
            # Live, not listed: the old registration is listed too. A broker opens its port only
            # once it registered under its own session (cluster_status: reachable and registered).
            try:
                st = hostaccess.call(self.inventory, "cluster_status", {"timeout_s": 5.0}, timeout_s=30)
            except Exception:  # noqa: BLE001 - no observer now: ask again, up to the deadline
                st = {}
            if ids <= {b["id"] for b in st.get("brokers") or [] if b.get("alive")}:
                return True
            time.sleep(2.0)
        return not ids

    def undo_problems(self, undo: dict) -> list[str]:
        """Each entry against what this stack's own faults could have noted: the services
        (name, spec, namespace) of its DC-loss hosts, their disks, its DCs by number."""
        hosts = self.inventory.hosts(*DC_LOSS_ROLES)
        services = {(h.name, spec_path(h), h.netns) for h in hosts}
        disks = {Path(h.vars["data_root"]).name for h in hosts}
        dcs = range(1, len(self.topology.dc_names) + 1)
        out = [f"{key}: not a change a lab fault makes" for key in sorted(set(undo) - set(UNDO_KEYS))]
        for entry in _items(undo, "restart", out):
            if not (isinstance(entry, list) and tuple(entry) in services):
                out.append(f"restart {entry!r}: not a service of this stack's hosts")
        for short in _items(undo, "power", out):
            if short not in disks:
                out.append(f"power {short!r}: not a disk of this stack's hosts")
        if "isolation" in undo and not (_whole(undo["isolation"]) and undo["isolation"] in dcs):
            out.append(f"isolation {undo['isolation']!r}: not a DC of this stack")
        for pair in _items(undo, "links", out):
            if not (isinstance(pair, list) and len(pair) == 2 and all(_whole(i) and i in dcs for i in pair)):
                out.append(f"links {pair!r}: not a pair of this stack's DCs")
        if "killed_ms" in undo and not (_whole(undo["killed_ms"]) and undo["killed_ms"] > 0):
            out.append(f"killed_ms {undo['killed_ms']!r}: not a time")
        return out

    def undo(self, undo: dict) -> None:
        for short in undo.get("power") or []:  # the disks first: the services start on them
            disk.power(layout.lab_dir(state_dir()), short)
        if undo.get("restart"):
            # ZooKeeper and controllers at once: they register nothing a session must outlive,
            # and a started peer's votes end the survivors' election backoff. The brokers wait
            # for the settle, which needs that quorum.
            brokers = {h.name for h in self.inventory.brokers}
            if first := [s for s in undo["restart"] if s[0] not in brokers]:
                restart(first, settle_s=0.0)
            restart(undo["restart"], settle_s=self._settle_s(undo))
            self._until_registered(undo["restart"])
        if undo.get("isolation"):
            netns.heal_isolation(undo["isolation"])
        if undo.get("links"):  # back to the stack's configured shapes, for the pairs the fault changed
            links, configured = self.shaper(), self.configured_links()
            table = links.current()
            for a, b in undo["links"]:
                table[(a, b)], table[(b, a)] = configured[(a, b)], configured[(b, a)]
            links.apply(table)
