"""Plain functions over Linux network namespaces: the lab's "cloud API".

Layout (prefix P, default 10.77; DC number i counts from 1 in config order):

    root ns --dcd-mgmt (P.0.1/30)--- mgmt0 (P.0.2) [dcd-router]
        [dcd-router] dc<i> (P.i.1/24) --- up0 [dcd-<dc>: br0] --- eth0 [dcd-<host>] (P.i.10+)

Hosts of a DC hang off that DC's bridge; all inter-DC traffic is routed by the router
namespace, where each DC pair's delay, jitter, loss and bandwidth are applied (infra/lab/shaper.py:
netem, or the userspace forwarder) and where a DC is cut off (iptables FORWARD drops). Lab
namespaces route only P.0.0/16: nothing can leave the machine.
The Pulumi dynamic providers (infra/lab/resources.py) and the lab's fault driver
(chaos/faults/lab.py) call these.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

ROUTER = "dcd-router"
MGMT_DEV = "dcd-mgmt"
NS_PREFIX = "dcd-"
# The block older labs wrote into the machine's /etc/hosts (set_names takes it out).
HOSTS_BEGIN = "# BEGIN dcdrill lab (managed by pulumi; removed by pulumi destroy)"
HOSTS_END = "# END dcdrill lab"


class LabUnavailable(RuntimeError):
    """This machine cannot run the lab (not root, no netns support)."""


def sh(*argv: str, ns: str | None = None, check: bool = True, input: str | None = None) -> str:
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(argv)
    res = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


def require_support() -> None:
    """One clear sentence when the lab cannot run here, instead of a stack trace later."""
    if os.geteuid() != 0:
        raise LabUnavailable("the local lab creates network namespaces and needs root: run it as root (sudo make lab)")
    if shutil.which("ip") is None:
        raise LabUnavailable("the local lab needs iproute2's `ip`: run `make setup` (it apt-get installs iproute2)")
    probe = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise LabUnavailable(f"this kernel or sandbox has no network-namespace support: {probe.stderr.strip()}")


def ns_exists(ns: str) -> bool:
    return Path(f"/run/netns/{ns}").exists()


def lab_namespaces() -> list[str]:
    out = sh("ip", "netns", "list", check=False)
    return sorted(line.split()[0] for line in out.splitlines() if line.startswith(NS_PREFIX))


def ns_pids(ns: str) -> list[int]:
    if not ns_exists(ns):
        return []
    return [int(p) for p in sh("ip", "netns", "pids", ns, check=False).split()]


def kill_ns_processes(ns: str, sig: int = signal.SIGKILL, wait_s: float = 10.0) -> None:
    for pid in ns_pids(ns):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait_s
    while ns_pids(ns) and time.monotonic() < deadline:
        time.sleep(0.1)


def add_ns(ns: str) -> None:
    if not ns_exists(ns):
        sh("ip", "netns", "add", ns)
    sh("ip", "link", "set", "lo", "up", ns=ns)


def delete_ns(ns: str) -> None:
    kill_ns_processes(ns)
    if ns_exists(ns):
        sh("ip", "netns", "delete", ns)
    shutil.rmtree(f"/etc/netns/{ns}", ignore_errors=True)


def veth(a: str, a_ns: str | None, b: str, b_ns: str) -> None:
    """A veth pair a<->b, a moved into a_ns (None = root ns), b into b_ns, both up."""
    tag = os.urandom(4).hex()  # creates run in parallel threads of one provider process
    tmp_a, tmp_b = f"ta{tag}", f"tb{tag}"
    sh("ip", "link", "add", tmp_a, "type", "veth", "peer", "name", tmp_b)
    if a_ns:
        sh("ip", "link", "set", tmp_a, "netns", a_ns)
    sh("ip", "link", "set", tmp_b, "netns", b_ns)
    sh("ip", "link", "set", tmp_a, "name", a, ns=a_ns)
    sh("ip", "link", "set", tmp_b, "name", b, ns=b_ns)
    sh("ip", "link", "set", a, "up", ns=a_ns)
    sh("ip", "link", "set", b, "up", ns=b_ns)


def link_exists(dev: str, ns: str | None = None) -> bool:
    if ns and not ns_exists(ns):
        return False
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ip", "link", "show", dev]
    return subprocess.run(cmd, capture_output=True).returncode == 0


# -- router -------------------------------------------------------------------------------------
def control_address(prefix: str) -> str:
    """The root namespace's end of the management link: where the control's packets come from."""
    return f"{prefix}.0.1"


def create_router(prefix: str) -> None:
    add_ns(ROUTER)
    sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=ROUTER)
    if not link_exists(MGMT_DEV):
        veth(MGMT_DEV, None, "mgmt0", ROUTER)
        sh("ip", "addr", "add", f"{control_address(prefix)}/30", "dev", MGMT_DEV)
        sh("ip", "addr", "add", f"{prefix}.0.2/30", "dev", "mgmt0", ns=ROUTER)
    # The root ns reaches the lab (Ansible over SSH, `dcdrill status`) through the router only.
    sh("ip", "route", "replace", f"{prefix}.0.0/16", "via", f"{prefix}.0.2", "dev", MGMT_DEV)


def delete_router(prefix: str) -> None:
    sh("ip", "route", "del", f"{prefix}.0.0/16", check=False)
    if link_exists(MGMT_DEV):
        sh("ip", "link", "del", MGMT_DEV)
    delete_ns(ROUTER)


# -- datacenters and their links to the router ---------------------------------------------------
def dc_ns(dc: str) -> str:
    return f"{NS_PREFIX}{dc}"[:32]


def create_dc(dc: str) -> None:
    ns = dc_ns(dc)
    add_ns(ns)
    if not link_exists("br0", ns):
        sh("ip", "link", "add", "br0", "type", "bridge", ns=ns)
        sh("ip", "link", "set", "br0", "up", ns=ns)


def delete_dc(dc: str) -> None:
    delete_ns(dc_ns(dc))


def router_dev(index: int) -> str:
    return f"dc{index}"


def create_link(dc: str, index: int, prefix: str) -> None:
    """Join a DC's bridge to the router (infra/lab/shaper.py shapes what crosses it)."""
    ns, dev = dc_ns(dc), router_dev(index)
    if not link_exists(dev, ROUTER):
        veth(dev, ROUTER, "up0", ns)
        sh("ip", "link", "set", "up0", "master", "br0", ns=ns)
        sh("ip", "addr", "add", f"{prefix}.{index}.1/24", "dev", dev, ns=ROUTER)


def netem_supported() -> bool:
    """Some kernels are built without sch_netem (CONFIG_NET_SCH_NETEM unset): then the forwarder."""
    probe = subprocess.run(
        ["tc", "qdisc", "add", "dev", MGMT_DEV, "root", "netem", "delay", "1ms"], capture_output=True, text=True
    )
    if probe.returncode == 0:
        subprocess.run(["tc", "qdisc", "del", "dev", MGMT_DEV, "root"], capture_output=True)
        return True
    return "unknown" not in probe.stderr and "No such file" not in probe.stderr


def delete_link(index: int) -> None:
    if link_exists(router_dev(index), ROUTER):
        sh("ip", "link", "del", router_dev(index), ns=ROUTER)


# -- cutting a DC off at the router ---------------------------------------------------------------
def _isolation_rules(index: int, direction: str) -> list[list[str]]:
    dev = router_dev(index)
    rules = []
    if direction in ("both", "ingress"):  # traffic into the DC
        rules.append(["FORWARD", "-o", dev, "-j", "DROP", "-m", "comment", "--comment", f"dcdrill-isolate-{dev}"])
    if direction in ("both", "egress"):  # traffic out of the DC
        rules.append(["FORWARD", "-i", dev, "-j", "DROP", "-m", "comment", "--comment", f"dcdrill-isolate-{dev}"])
    return rules


def isolate_dc(index: int, direction: str = "both") -> None:
    if direction not in ("both", "ingress", "egress"):
        raise ValueError(f"direction must be both, ingress or egress, not {direction!r}")
    for rule in _isolation_rules(index, direction):
        if subprocess.run(["ip", "netns", "exec", ROUTER, "iptables", "-C", *rule], capture_output=True).returncode:
            sh("iptables", "-I", *rule, ns=ROUTER)


def heal_isolation(index: int) -> None:
    for rule in _isolation_rules(index, "both"):
        while (
            subprocess.run(["ip", "netns", "exec", ROUTER, "iptables", "-D", *rule], capture_output=True).returncode
            == 0
        ):
            pass


def is_isolated(index: int) -> bool:
    return f"dcdrill-isolate-{router_dev(index)}" in sh("iptables", "-S", "FORWARD", ns=ROUTER, check=False)


# -- hosts ----------------------------------------------------------------------------------------
def host_ns(short: str) -> str:
    return f"{NS_PREFIX}{short}"


def create_host(short: str, dc: str, ip: str, gateway: str, prefix: str, hosts_file: Path) -> None:
    ns = host_ns(short)
    add_ns(ns)
    if not link_exists("eth0", ns):
        veth(f"h-{short}"[:15], dc_ns(dc), "eth0", ns)
        sh("ip", "link", "set", f"h-{short}"[:15], "master", "br0", ns=dc_ns(dc))
        sh("ip", "addr", "add", f"{ip}/24", "dev", "eth0", ns=ns)
        # Only the lab's own range is routable: no default route, nothing leaves the machine.
        sh("ip", "route", "add", f"{prefix}.0.0/16", "via", gateway, ns=ns)
        # A host made again at the same address has a new MAC: the router's old neighbour entry
        # would send its traffic nowhere until it times out.
        if ns_exists(ROUTER):
            sh("ip", "neigh", "flush", "to", ip, ns=ROUTER, check=False)
    # `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts: one shared file for all.
    etc = Path(f"/etc/netns/{ns}")
    etc.mkdir(parents=True, exist_ok=True)
    if not (etc / "hosts").is_symlink():
        (etc / "hosts").unlink(missing_ok=True)
        (etc / "hosts").symlink_to(hosts_file)


def delete_host(short: str) -> None:
    delete_ns(host_ns(short))


def host_address(short: str) -> str | None:
    ns = host_ns(short)
    if not ns_exists(ns):
        return None
    out = sh("ip", "-4", "-o", "addr", "show", "dev", "eth0", ns=ns, check=False).split()
    return out[3].split("/")[0] if len(out) > 3 else None


# -- names: the lab's /etc/hosts, shared by every lab namespace and read by nothing else ----------
def _rewrite_in_place(path: Path, transform) -> None:
    """Rewrite a file keeping its inode: namespaces see it through bind mounts of that inode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(exist_ok=True)
    with open(path, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        new = transform(f.read())
        f.seek(0)
        f.write(new)
        f.truncate()


def names(text: str) -> dict[str, str]:
    """A hosts file's {name: address} (each line's first name; the short alias is derived)."""
    return {ln.split()[1]: ln.split()[0] for ln in text.splitlines() if len(ln.split()) >= 2 and not ln.startswith("#")}


def _set_entries(text: str, entries: dict[str, str | None]) -> str:
    current = {name: ip for name, ip in names(text).items() if name != "localhost"}
    for name, ip in entries.items():
        if ip is None:
            current.pop(name, None)
        else:
            current[name] = ip
    # Every namespace shares the machine's hostname (no UTS namespace); it names loopback, as on
    # Debian, so sudo (the login user's become) resolves it.
    loopback = f"127.0.0.1\tlocalhost {socket.gethostname()}"
    body = [f"{ip}\t{name} {name.split('.')[0]}" for name, ip in sorted(current.items())]
    return "\n".join([loopback, *body]) + "\n"


def _without_block(text: str) -> str:
    """The machine's hosts file without the block an older lab wrote into it."""
    lines = text.splitlines()
    b, e = lines.index(HOSTS_BEGIN), lines.index(HOSTS_END)
    return "\n".join(lines[:b] + lines[e + 1 :]) + "\n"


def set_names(entries: dict[str, str | None], hosts_file: Path, machine_hosts: Path = Path("/etc/hosts")) -> None:
    """Add (ip) or remove (None) lab names in the lab's hosts file, which only the lab's hosts read
    (as only the VPC reads its private zone on AWS): the control resolves none of them. A block an
    older lab wrote into the machine's own file is taken out."""
    _rewrite_in_place(hosts_file, lambda t: _set_entries(t, entries))
    if machine_hosts.exists() and HOSTS_BEGIN in machine_hosts.read_text():
        _rewrite_in_place(machine_hosts, _without_block)
