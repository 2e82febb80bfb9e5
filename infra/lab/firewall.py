"""Each lab host's firewall: inbound default-deny, admitting the stack's flow table (infra/flows.py),
as the security groups rendered from the same table admit on AWS. A flow dcdrill uses but the
table lacks is dropped here as it would be there, so the lab finds it.

Besides the table: the host's own address and loopback (a broker's tools dial the broker itself),
replies (conntrack), ICMP, and host access (SSH from the control; SSM needs no inbound port on
AWS). Nothing else from the control: it dials no port of the cluster.
"""

from __future__ import annotations

from dcdrill.infra import flows
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.lab import netns

HOST_ACCESS_PORT = 22  # the lab's sshd (infra/lab/sshd.py)


def render(d: Deployment, addresses: dict[str, str], prefix: str) -> dict[str, str]:
    """iptables-restore input per host short name, sorted and deterministic."""
    by_role: dict[str, list[str]] = {}
    for h in d.hosts():
        by_role.setdefault(h.role, []).append(addresses[h.name])
    admitted = flows.table(d)
    out = {}
    for h in sorted(d.hosts(), key=lambda h: h.short):
        rules = [
            "-A INPUT -i lo -j ACCEPT",
            "-A INPUT -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
            "-A INPUT -p icmp -j ACCEPT",
            f'-A INPUT -s {addresses[h.name]}/32 -m comment --comment "the host itself" -j ACCEPT',
            f"-A INPUT -s {netns.control_address(prefix)}/32 -p tcp -m tcp --dport {HOST_ACCESS_PORT} "
            f'-m comment --comment "host access" -j ACCEPT',
        ]
        for f in admitted:
            if f.target != h.role:
                continue
            for source in sorted(set(by_role.get(f.source, []))):
                rules.append(
                    f'-A INPUT -s {source}/32 -p tcp -m tcp --dport {f.port} -m comment --comment "{f}" -j ACCEPT'
                )
        out[h.short] = "\n".join(
            ["*filter", ":INPUT DROP [0:0]", ":FORWARD ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]", *rules, "COMMIT", ""]
        )
    return out


def apply(short: str, rules: str) -> None:
    netns.sh("iptables-restore", ns=netns.host_ns(short), input=rules)


def installed(short: str) -> list[str]:
    """The host's INPUT policy and rules as iptables-save prints them."""
    return expected(netns.sh("iptables-save", "-t", "filter", ns=netns.host_ns(short), check=False))


def expected(rules: str) -> list[str]:
    """The INPUT policy and rules of iptables-restore (or -save) text."""
    return [ln for ln in rules.splitlines() if ln.startswith((":INPUT", "-A INPUT"))]
