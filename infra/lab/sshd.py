"""SSH into lab hosts, so Ansible reaches a namespace exactly as it reaches an EC2 host."""
from __future__ import annotations

import fcntl
import subprocess
from pathlib import Path

from dcdrill.infra.lab import netns


def keypair(lab_dir: Path) -> Path:
    """The lab's client key (private key path); its public half is the hosts' authorized key.

    Hosts are created in parallel: a file lock makes exactly one of them generate the keys.
    """
    ssh = lab_dir / "ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    key, host_key = ssh / "id_ed25519", ssh / "ssh_host_ed25519_key"
    with open(ssh / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for path, comment in ((key, "dcdrill-lab"), (host_key, "dcdrill-lab-host")):
            if not path.exists():
                subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                               check=True, stdin=subprocess.DEVNULL, capture_output=True)
    return key


def start(short: str, ip: str, lab_dir: Path) -> None:
    """Start sshd inside the host's namespace, listening on its lab address only."""
    key = keypair(lab_dir)
    ssh = lab_dir / "ssh"
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    pidfile = lab_dir / "hosts" / short / "sshd.pid"
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    ns = netns.host_ns(short)
    if pidfile.exists() and any(str(p) == pidfile.read_text().strip() for p in netns.ns_pids(ns)):
        return
    netns.sh(
        "/usr/sbin/sshd", "-f", "/dev/null",
        "-o", f"ListenAddress={ip}", "-o", f"HostKey={ssh / 'ssh_host_ed25519_key'}",
        "-o", f"PidFile={pidfile}", "-o", f"AuthorizedKeysFile={key}.pub",
        "-o", "PermitRootLogin=prohibit-password", "-o", "PasswordAuthentication=no",
        "-o", "KbdInteractiveAuthentication=no", "-o", "UsePAM=no", "-o", "StrictModes=no",
        "-o", "Subsystem=sftp internal-sftp", "-o", "MaxStartups=100", "-o", "MaxSessions=100",
        ns=ns,
    )
