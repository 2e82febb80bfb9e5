"""How a test reaches the lab's cluster: as an application on a client host (inside a DC), never
from the control, whose dials the lab firewall drops as a VPC drops a CI runner's."""

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

# The drills in the tests run 50 records/s per producer, not the drill's 200: what they assert
# does not depend on the load, and on CI's 2 cores a lighter one leaves the CPU to the brokers'
# restarts and the tests beside. The power-loss drill keeps the default: its loss needs the load.
TEST_RATE = ["--rate", "50"]


def in_client(lab, dc: str, code: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Python `code` run as an application on `dc`'s client host (its namespace): the control
    itself reaches no broker (the lab firewall), as a CI runner reaches none on AWS."""
    ns = next(h.netns for h in lab.clients if h.dc == dc)
    return subprocess.run(
        ["ip", "netns", "exec", ns, sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout
    )


DIAL = (
    "import socket, sys\n"
    "try:\n    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1.5).close(); print('open')\n"
    "except ConnectionRefusedError: print('refused')\n"
    "except socket.gaierror: print('unresolved')\n"
    "except OSError: print('dropped')\n"
)


def lab_address(name: str) -> str:
    """A lab host's address, from the lab's own hosts file: the names resolve on the lab's hosts
    only, as a VPC's private zone does, never on the control."""
    from dcdrill.infra.constants import state_dir
    from dcdrill.infra.lab import layout, netns

    return netns.names((layout.lab_dir(state_dir()) / "hosts.txt").read_text())[name]


def dial(ns: str | None, host: str, port: int) -> str:
    """open / refused (the packet got through; nothing listens) / dropped (a firewall ate it) /
    unresolved (the name means nothing where the dial starts)."""
    argv = (["ip", "netns", "exec", ns] if ns else []) + ["python3", "-c", DIAL, host, str(port)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout.strip()


def cluster_ports_from_the_control(stack: str) -> dict:
    """Every port the stack's flow table opens on each of its hosts (Kafka, ZooKeeper, controller,
    MM2 REST), dialled from the control (the root namespace): {(host, port): open|refused|dropped}."""
    from dcdrill.infra import flows
    from dcdrill.infra import stack as stacks

    d = stacks.load_deployment(stack)
    ports = {}
    for f in flows.table(d):
        ports.setdefault(f.target, set()).add(f.port)
    # By address: the control resolves no lab name (see lab_address), so a dial by name proves nothing.
    targets = [(h.name, port) for h in d.hosts() for port in sorted(ports.get(h.role, ()))]
    # At once: each dropped dial waits out its 1.5 s timeout, one after another about 25 s a lab.
    with ThreadPoolExecutor(max_workers=len(targets) or 1) as pool:
        got = pool.map(lambda t: dial(None, lab_address(t[0]), t[1]), targets)
        return dict(zip(targets, got))
