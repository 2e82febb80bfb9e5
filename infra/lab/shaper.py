"""Inter-DC delay, jitter, loss and bandwidth in the lab, behind one interface over two ways:

* `netem`: the kernel's sch_netem, per DC pair, on the router's device into each DC (an HTB class
  per source DC, netem under it, a u32 filter on the source subnet);
* `forwarder`: for kernels without sch_netem, dcdrill's userspace forwarder
  (infra/lab/forwarder). Policy routing in the router namespace sends every packet that arrives
  from a DC (`iif dc<i>`) and is bound for a DC subnet into the TUN device `fwd0`; the forwarder
  holds it for its pair's delay and writes it back, and the main table routes it on. The TUN is
  persistent and table 100 keeps an `unreachable` route under each DC subnet: if the forwarder
  dies, packets wait or are dropped, they never take the direct path around it. Its supervisor
  restarts a dead worker, and `check()` fails loudly if either is gone.

Traffic between the machine and the lab (Ansible, `dcdrill status`) enters from mgmt0, is not
matched by the rules, and is never delayed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path

from dcdrill.infra.constants import BadStateFile, read_state_json
from dcdrill.infra.lab import netns

TUN, TABLE, RULE_PRIORITY = "fwd0", "100", "100"
RT_PRIORITY = "10"  # SCHED_FIFO, low among real-time tasks; the kernel's RT throttling still applies
SHAPERS = ("auto", "netem", "forwarder")


class ShaperDown(RuntimeError):
    """The lab's inter-DC links are not shaped as configured (the forwarder died, a reload failed)."""


@dataclass(frozen=True)
class LinkShape:
    """One direction of a DC pair."""

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0
    rate_mbit: float = 0.0  # 0: no cap

    @property
    def shaped(self) -> bool:
        return bool(self.latency_ms or self.jitter_ms or self.loss_pct or self.rate_mbit)


# (from DC index, to DC index) -> shape, for every ordered pair of distinct DCs.
LinkTable = dict[tuple[int, int], LinkShape]


def table_to_json(table: LinkTable) -> list[dict]:
    return [{"from": a, "to": b, **asdict(s)} for (a, b), s in sorted(table.items())]


def table_from_json(rows: list[dict]) -> LinkTable:
    return {
        (int(r["from"]), int(r["to"])): LinkShape(
            float(r["latency_ms"]), float(r["jitter_ms"]), float(r["loss_pct"]), float(r["rate_mbit"])
        )
        for r in rows
    }


class Shaper(ABC):
    kind: str

    def __init__(self, state_dir: Path, prefix: str, dcs: int):
        self.state_dir, self.prefix, self.dcs = Path(state_dir), prefix, dcs

    @abstractmethod
    def install(self, table: LinkTable) -> None:
        """Set the links up from nothing, shaped as `table`."""

    @abstractmethod
    def apply(self, table: LinkTable) -> None:
        """Change the shapes at run time (a fault, its heal); raises ShaperDown if not in force."""

    @abstractmethod
    def remove(self) -> None:
        """Leave nothing behind."""

    @abstractmethod
    def check(self) -> None:
        """Raise ShaperDown unless the links are shaped as last applied."""

    def save(self, table: LinkTable) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        state = {"kind": self.kind, "prefix": self.prefix, "dcs": self.dcs, "links": table_to_json(table)}
        tmp = self.state_dir / "shaper.json.tmp"
        tmp.write_text(json.dumps(state, indent=1))
        tmp.replace(self.state_dir / "shaper.json")

    def current(self) -> LinkTable:
        return table_from_json(read_state_json(self.state_dir / "shaper.json", kind=dict)["links"])


# -- the userspace forwarder ---------------------------------------------------------------------
def forwarder_binary() -> Path:
    from dcdrill.infra.constants import cache_dir

    return cache_dir() / "bin" / "dcdrill-forwarder"


class ForwarderShaper(Shaper):
    kind = "forwarder"

    @property
    def links_file(self) -> Path:
        return self.state_dir / "links.json"

    @property
    def pidfile(self) -> Path:
        return self.state_dir / "forwarder.pid"

    def _write_links(self, table: LinkTable) -> bytes:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        raw = json.dumps({"default": {}, "links": table_to_json(table)}, sort_keys=True).encode()
        tmp = self.links_file.with_suffix(".tmp")
        tmp.write_bytes(raw)
        tmp.replace(self.links_file)
        self.save(table)
        return raw

    def _wait_applied(self, raw: bytes, timeout_s: float = 10.0) -> None:
        applied = Path(str(self.links_file) + ".applied")
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if applied.exists() and applied.read_bytes() == raw:
                return
            time.sleep(0.02)
        raise ShaperDown(
            f"the forwarder did not apply {self.links_file} within {timeout_s:g} s "
            f"(see {self.state_dir / 'forwarder.log'})"
        )

    def supervisor_pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text())
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            return None
        return pid if b"dcdrill-forwarder" in cmd and b"--supervise" in cmd else None

    def worker_pids(self) -> list[int]:
        sup = self.supervisor_pid()
        if not sup:
            return []
        out = subprocess.run(["pgrep", "-P", str(sup)], capture_output=True, text=True).stdout
        return [int(p) for p in out.split()]

    def install(self, table: LinkTable) -> None:
        binary = forwarder_binary()
        if not binary.exists():
            raise ShaperDown(f"{binary} is missing: run `make setup` (it builds infra/lab/forwarder with Go)")
        r = netns.ROUTER
        if not netns.link_exists(TUN, r):
            netns.sh("ip", "tuntap", "add", "dev", TUN, "mode", "tun", ns=r)
        netns.sh("ip", "link", "set", TUN, "up", ns=r)
        # Packets come back out of fwd0 with a source that routes via dc<i>: strict reverse-path
        # filtering would drop them.
        for key in ("all", "default", TUN):
            netns.sh("sysctl", "-qw", f"net.ipv4.conf.{key}.rp_filter=0", ns=r)
        raw = self._write_links(table)
        if not self.supervisor_pid():
            log = open(self.state_dir / "forwarder.log", "ab")
            # Real-time priority, as netem has in the kernel's softirq: a drill keeps the lab's CPUs
            # busy, and a delay queued behind the JVMs would be the scheduler's, not the link's.
            proc = subprocess.Popen(
                [
                    "chrt",
                    "--fifo",
                    RT_PRIORITY,
                    "ip",
                    "netns",
                    "exec",
                    r,
                    str(binary),
                    "--supervise",
                    "--dev",
                    TUN,
                    "--links",
                    str(self.links_file),
                    "--prefix",
                    self.prefix,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.pidfile.write_text(str(proc.pid))  # chrt and `ip netns exec` exec the binary: same pid
        self._wait_applied(raw)
        for j in range(1, self.dcs + 1):
            subnet = f"{self.prefix}.{j}.0/24"
            netns.sh("ip", "route", "replace", subnet, "dev", TUN, "metric", "10", "table", TABLE, ns=r)
            netns.sh("ip", "route", "replace", "unreachable", subnet, "metric", "4000", "table", TABLE, ns=r)
        existing = netns.sh("ip", "rule", "show", ns=r)
        for i in range(1, self.dcs + 1):
            if f"iif {netns.router_dev(i)} lookup {TABLE}" not in existing:
                netns.sh(
                    "ip", "rule", "add", "iif", netns.router_dev(i), "lookup", TABLE, "priority", RULE_PRIORITY, ns=r
                )

    def apply(self, table: LinkTable) -> None:
        self.check_alive()
        raw = self._write_links(table)
        os.kill(self.supervisor_pid(), signal.SIGHUP)
        self._wait_applied(raw)

    def check_alive(self) -> None:
        if not self.supervisor_pid():
            raise ShaperDown(
                f"the lab's forwarder is not running (pidfile {self.pidfile}): inter-DC traffic is "
                "held, not delayed; `dcdrill lab up` starts it again"
            )
        if not self.worker_pids():
            time.sleep(0.5)  # the supervisor restarts a dead worker within 0.2 s
            if not self.worker_pids():
                raise ShaperDown(
                    "the lab forwarder's supervisor runs but its worker does not "
                    f"(see {self.state_dir / 'forwarder.log'})"
                )

    def check(self) -> None:
        self.check_alive()
        applied = Path(str(self.links_file) + ".applied")
        if not applied.exists() or applied.read_bytes() != self.links_file.read_bytes():
            raise ShaperDown(f"the forwarder's links differ from {self.links_file}")

    def remove(self) -> None:
        pid = self.supervisor_pid()
        if pid:
            workers = self.worker_pids()
            os.kill(pid, signal.SIGTERM)
            for w in workers:
                try:
                    os.kill(w, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        r = netns.ROUTER
        if netns.ns_exists(r):
            for i in range(1, self.dcs + 1):
                netns.sh("ip", "rule", "del", "iif", netns.router_dev(i), "lookup", TABLE, ns=r, check=False)
            netns.sh("ip", "route", "flush", "table", TABLE, ns=r, check=False)
            if netns.link_exists(TUN, r):
                netns.sh("ip", "link", "del", TUN, ns=r)
        self.pidfile.unlink(missing_ok=True)


# -- the kernel's netem ---------------------------------------------------------------------------
def netem_commands(prefix: str, dcs: int, table: LinkTable) -> list[list[str]]:
    """tc commands (router namespace) shaping every pair: on the device into DC j, one HTB class
    per source DC i, netem under it, and a filter on i's subnet. Unmatched traffic is not shaped."""
    cmds = []
    for j in range(1, dcs + 1):
        dev = netns.router_dev(j)
        cmds.append(["tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "999"])
        cmds.append(["tc", "class", "replace", "dev", dev, "parent", "1:", "classid", "1:999", "htb", "rate", "10gbit"])
        for i in range(1, dcs + 1):
            shape = table.get((i, j))
            if i == j or shape is None:
                continue
            rate = f"{shape.rate_mbit:g}mbit" if shape.rate_mbit else "10gbit"
            cmds.append(
                ["tc", "class", "replace", "dev", dev, "parent", "1:", "classid", f"1:{i}", "htb", "rate", rate]
            )
            netem = [
                "tc",
                "qdisc",
                "replace",
                "dev",
                dev,
                "parent",
                f"1:{i}",
                "handle",
                f"{i}0:",
                "netem",
                "limit",
                "20000",
                "delay",
                f"{shape.latency_ms:g}ms",
            ]
            if shape.jitter_ms:
                netem.append(f"{shape.jitter_ms:g}ms")
            if shape.loss_pct:
                netem += ["loss", f"{shape.loss_pct:g}%"]
            cmds.append(netem)
            cmds.append(
                [
                    "tc",
                    "filter",
                    "replace",
                    "dev",
                    dev,
                    "parent",
                    "1:",
                    "protocol",
                    "ip",
                    "prio",
                    "1",
                    "handle",
                    f"800::{i}",
                    "u32",
                    "match",
                    "ip",
                    "src",
                    f"{prefix}.{i}.0/24",
                    "flowid",
                    f"1:{i}",
                ]
            )
    return cmds


class NetemShaper(Shaper):
    kind = "netem"

    def install(self, table: LinkTable) -> None:
        self.apply(table)

    def apply(self, table: LinkTable) -> None:
        for cmd in netem_commands(self.prefix, self.dcs, table):
            netns.sh(*cmd, ns=netns.ROUTER)
        self.save(table)

    def check(self) -> None:
        for j in range(1, self.dcs + 1):
            if "netem" not in netns.sh("tc", "qdisc", "show", "dev", netns.router_dev(j), ns=netns.ROUTER, check=False):
                raise ShaperDown(f"no netem qdisc on the router's {netns.router_dev(j)}")

    def remove(self) -> None:
        if netns.ns_exists(netns.ROUTER):
            for j in range(1, self.dcs + 1):
                netns.sh("tc", "qdisc", "del", "dev", netns.router_dev(j), "root", ns=netns.ROUTER, check=False)


def for_kind(kind: str, state_dir: Path, prefix: str, dcs: int) -> Shaper:
    """`auto`: netem where the kernel has it, else the forwarder."""
    if kind not in SHAPERS:
        raise ValueError(f"shaper must be one of {', '.join(SHAPERS)}, not {kind!r}")
    if kind == "auto":
        kind = "netem" if netns.netem_supported() else "forwarder"
    return (NetemShaper if kind == "netem" else ForwarderShaper)(state_dir, prefix, dcs)


def installed(state_dir: Path) -> Shaper:
    """The shaper `lab up` installed (its state file says which)."""
    path = Path(state_dir) / "shaper.json"
    if not path.exists():
        raise ShaperDown(f"no link shaper is installed ({path} is missing): bring the lab up with `dcdrill lab up`")
    state = read_state_json(path, kind=dict)
    if state.get("kind") not in ("netem", "forwarder") or not isinstance(state.get("dcs"), int):
        raise BadStateFile(
            f"{path}: not a shaper's state (kind netem or forwarder, dcs a number); `dcdrill lab up` rewrites it"
        )
    return (NetemShaper if state["kind"] == "netem" else ForwarderShaper)(
        Path(state_dir), state["prefix"], state["dcs"]
    )
