"""A lab host's data disk that can lose power (infra/lab/disk, `dcdrill-disk`): on a stack with
`lab.powerLoss`, each host's data root is a FUSE mount of a backing folder, as an EC2 host's is
its data volume. It passes everything through and remembers what was not yet durable (fsync'd,
or older than the kernel's write-back delay), so the `power-loss` fault can take exactly that.

The daemon runs in the machine's own namespace, not the host's: killing a DC's processes must not
take its disks with them.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from dcdrill.infra.constants import cache_dir


class DiskError(RuntimeError):
    """A lab disk that is missing, not mounted, or did not answer."""


def binary() -> Path:
    """Built by `make setup` from infra/lab/disk (Go, github.com/hanwen/go-fuse/v2)."""
    return cache_dir() / "bin" / "dcdrill-disk"


def backing(lab_dir: Path, short: str) -> Path:
    return lab_dir / "disks" / short


def _control(lab_dir: Path, short: str) -> Path:
    return lab_dir / "disks" / f"{short}.sock"


def _pidfile(lab_dir: Path, short: str) -> Path:
    return lab_dir / "disks" / f"{short}.pid"


def mounts() -> list[str]:
    """Where a dcdrill disk is mounted on this machine, any lab's."""
    with open("/proc/self/mountinfo") as f:
        return [line.split()[4] for line in f if "dcdrill-disk" in line]


def mounted(mount: Path) -> bool:
    return str(mount.resolve()) in mounts()


# A truncate is metadata: durable once the journal commits it, every 5 s on ext4 (the AWS hosts'
# data volume), long before the 30 s write-back of the data around it.
JOURNAL_COMMIT_S = 5.0


def start(
    lab_dir: Path,
    short: str,
    mount: Path,
    writeback_s: float,
    timeout_s: float = 10.0,
    journal_commit_s: float = JOURNAL_COMMIT_S,
) -> None:
    """Mount the host's disk at `mount` (its data root), which must be empty; a no-op if mounted."""
    if mounted(mount):
        return
    if not binary().exists():
        raise DiskError(f"{binary()} is missing: run `make setup` (it builds infra/lab/disk with Go)")
    store = backing(lab_dir, short)
    store.mkdir(parents=True, exist_ok=True)
    mount.mkdir(parents=True, exist_ok=True)
    control = _control(lab_dir, short)
    log = open(lab_dir / "disks" / f"{short}.log", "ab")
    proc = subprocess.Popen(
        [
            str(binary()),
            "-backing",
            str(store),
            "-mount",
            str(mount),
            "-control",
            str(control),
            "-writeback-after",
            f"{writeback_s:g}s",
            "-journal-commit",
            f"{journal_commit_s:g}s",
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    _pidfile(lab_dir, short).write_text(str(proc.pid))
    deadline = time.monotonic() + timeout_s
    while not (mounted(mount) and control.exists()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise DiskError(
                f"{short}'s disk did not mount at {mount} within {timeout_s:g} s "
                f"(see {lab_dir / 'disks' / f'{short}.log'})"
            )
        time.sleep(0.05)


def stop(lab_dir: Path, short: str, mount: Path, timeout_s: float = 10.0) -> None:
    """Unmount the host's disk (its processes are gone first) and end its daemon."""
    pidfile = _pidfile(lab_dir, short)
    pid = int(pidfile.read_text()) if pidfile.exists() else None
    if pid and _is_disk(pid):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _is_disk(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    if mounted(mount):  # a daemon that could not unmount (a file still open): detach it
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)
    if pid and _is_disk(pid):
        os.kill(pid, signal.SIGKILL)
    pidfile.unlink(missing_ok=True)


def _is_disk(pid: int) -> bool:
    try:
        return b"dcdrill-disk" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _ask(lab_dir: Path, short: str, command: str, timeout_s: float = 60.0) -> dict:
    path = _control(lab_dir, short)
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout_s)
            s.connect(str(path))
            s.sendall(f"{command}\n".encode())
            answer = json.loads(s.makefile().readline() or "{}")
    except (OSError, ValueError) as exc:
        raise DiskError(f"{short}'s disk did not answer {command!r} on {path}: {exc}") from exc
    if "error" in answer:
        raise DiskError(f"{short}'s disk: {answer['error']}")
    return answer


def cut(lab_dir: Path, short: str) -> dict:
    """The power goes: no write lands from now on, and every file is back to what was durable.
    Returns {"files": n, "bytes_lost": n}."""
    return _ask(lab_dir, short, "cut")


def power(lab_dir: Path, short: str) -> None:
    """The power comes back: the disk takes writes again."""
    _ask(lab_dir, short, "power")


def stats(lab_dir: Path, short: str) -> dict:
    """{"powered": bool, "dirty_files": n, "dirty_bytes": n}."""
    return _ask(lab_dir, short, "stats")


def unpowered(lab_dir: Path) -> list[str]:
    """The lab's hosts whose disk is cut (a power-loss fault not healed). A disk whose daemon is
    gone is not listed: the host's own check at `lab up` rebuilds it."""
    out = []
    for sock in sorted((lab_dir / "disks").glob("*.sock")) if (lab_dir / "disks").is_dir() else []:
        try:
            if not stats(lab_dir, sock.stem)["powered"]:
                out.append(sock.stem)
        except DiskError:
            continue
    return out
