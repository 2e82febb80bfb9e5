"""The hosts' SSH keys the control trusts: Ansible and host access refuse a host whose key is not
in its inventory's known_hosts (StrictHostKeyChecking=yes on both backends).

The lab pins its hosts' key when it starts their sshd (infra/lab/sshd.py: it made the key). An
EC2 host's key is learned at first contact, before the first play (`learn`): the SSM session ssh
rides already proved which instance it reached, so accepting its key then is trusting AWS's
authentication of the instance, not the network's. After that a changed key is refused.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import hostaccess


class HostKeysUnknown(hostaccess.HostUnreachable):
    """A host did not answer the first contact, so its key could not be learned."""


def known_hosts(inventory: Inventory) -> Path:
    """The known_hosts file the inventory's ssh options name."""
    if (path := hostaccess.known_hosts_file(inventory)) is None:
        raise ValueError(f"cluster {inventory.vars.get('cluster_name')}: its ssh options name no known_hosts file")
    return path


def known(path: Path, name: str) -> bool:
    """Whether `path` holds a key for `name` (ssh-keygen -F: hashed or plain entries alike)."""
    if not path.is_file():
        return False
    return subprocess.run(["ssh-keygen", "-F", name, "-f", str(path)], capture_output=True).returncode == 0


def learn(inventory: Inventory, timeout_s: float = 120) -> list[str]:
    """Contact each host whose key is not yet known, accepting the key it shows (accept-new, which
    still refuses a changed one); the hosts learned. HostKeysUnknown names those that did not answer."""
    path = known_hosts(inventory)
    path.parent.mkdir(parents=True, exist_ok=True)
    learned, failed = [], []
    for host in inventory.hosts():
        # ssh looks a host up by its HostName option (the lab's address) when it has one.
        alias = re.search(r"HostName=(\S+)", host.vars.get("ansible_ssh_extra_args", ""))
        if known(path, alias.group(1) if alias else host.address):
            continue
        # ssh takes an option's first value: these win over the inventory's own StrictHostKeyChecking=yes.
        first = ["-o", "StrictHostKeyChecking=accept-new", "-o", f"UserKnownHostsFile={path}"]
        res = subprocess.run(
            hostaccess.ssh_command(inventory, host, ["true"], first), capture_output=True, text=True, timeout=timeout_s
        )
        if res.returncode == 0:
            learned.append(host.name)
        else:
            failed.append(f"{host.name}: {hostaccess.reason(res)}")
    if failed:
        raise HostKeysUnknown("no first contact, so no host key learned, with " + "; ".join(failed))
    return learned
