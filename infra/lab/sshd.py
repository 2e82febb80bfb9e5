"""SSH into lab hosts, so Ansible reaches a namespace exactly as it reaches an EC2 host: as an
unprivileged login user (LOGIN_USER, the same on AWS) that tasks leave only through
`become` (sudo), never as root."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

from dcdrill.infra.constants import LOGIN_USER, SSHD_LIMITS
from dcdrill.infra.lab import netns

SUDOERS = Path("/etc/sudoers.d/dcdrill-lab")


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
                subprocess.run(
                    ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                    check=True,
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                )
        _login_user(key.with_suffix(".pub"))
    return key


def _login_user(public_key: Path) -> None:
    """The lab's login user: a system user whose one authorized key is the lab's, allowed sudo as
    the same user is on AWS. Called under keypair's lock."""
    import pwd

    if shutil.which("sudo") is None:
        raise RuntimeError("the lab's login user needs sudo (become): apt-get install sudo, or run `make setup`")
    try:
        home = Path(pwd.getpwnam(LOGIN_USER).pw_dir)
    except KeyError:
        home = Path("/var/lib") / LOGIN_USER
        subprocess.run(
            ["useradd", "--system", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh", LOGIN_USER],
            check=True,
            capture_output=True,
        )
        # A system user's password is locked ("!"), and sshd refuses a locked account a key login
        # too; "*" has no password and is not locked.
        subprocess.run(["usermod", "--password", "*", LOGIN_USER], check=True, capture_output=True)
    entry = pwd.getpwnam(LOGIN_USER)
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, exist_ok=True)
    (ssh / "authorized_keys").write_text(public_key.read_text())
    for path in (ssh, ssh / "authorized_keys"):
        os.chown(path, entry.pw_uid, entry.pw_gid)
    (ssh / "authorized_keys").chmod(0o600)
    if not SUDOERS.exists():
        SUDOERS.write_text(
            f"# dcdrill's lab: its login user becomes root as on AWS\n{LOGIN_USER} ALL=(ALL) NOPASSWD: ALL\n"
        )
        SUDOERS.chmod(0o440)


def known_hosts(lab_dir: Path) -> Path:
    """The lab's known_hosts: each host's address with the key its sshd shows (infra/host_keys.py)."""
    return lab_dir / "ssh" / "known_hosts"


def _pin(ip: str, lab_dir: Path) -> None:
    """Pin the host key for `ip` (the lab made the key, so there is nothing to learn)."""
    ssh = lab_dir / "ssh"
    kind, key = (ssh / "ssh_host_ed25519_key.pub").read_text().split()[:2]
    with open(ssh / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = known_hosts(lab_dir)
        kept = [x for x in (path.read_text().splitlines() if path.exists() else []) if x.split(" ", 1)[0] != ip]
        path.write_text("".join(f"{x}\n" for x in [*kept, f"{ip} {kind} {key}"]))


def start(short: str, ip: str, lab_dir: Path) -> None:
    """Start sshd inside the host's namespace, listening on its lab address only."""
    keypair(lab_dir)  # made once per lab
    _pin(ip, lab_dir)
    ssh = lab_dir / "ssh"
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
    pidfile = lab_dir / "hosts" / short / "sshd.pid"
    pidfile.parent.mkdir(parents=True, exist_ok=True)
    ns = netns.host_ns(short)
    if pidfile.exists() and any(str(p) == pidfile.read_text().strip() for p in netns.ns_pids(ns)):
        return
    netns.sh(
        "/usr/sbin/sshd",
        "-f",
        "/dev/null",
        "-o",
        f"ListenAddress={ip}",
        "-o",
        f"HostKey={ssh / 'ssh_host_ed25519_key'}",
        "-o",
        f"PidFile={pidfile}",
        "-o",
        "AuthorizedKeysFile=.ssh/authorized_keys",
        "-o",
        "PermitRootLogin=no",
        "-o",
        f"AllowUsers={LOGIN_USER}",
        "-o",
        "PasswordAuthentication=no",
        "-o",
        "KbdInteractiveAuthentication=no",
        "-o",
        "UsePAM=no",
        "-o",
        "StrictModes=no",
        "-o",
        "Subsystem=sftp internal-sftp",
        *(a for key, value in SSHD_LIMITS.items() for a in ("-o", f"{key}={value}")),
        ns=ns,
    )
