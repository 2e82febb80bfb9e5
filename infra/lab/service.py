"""The lab's service supervisor: what systemd does on a real host, for hosts without systemd.

The Ansible roles render one JSON spec per service ({name, argv, match, env, cwd, log, pidfile}) and
call `python -m dcdrill.infra.lab.service start SPEC` inside the host's namespace; the chaos driver's
heal restarts a killed service with the same command. Exit codes follow systemctl's habits:
status exits 3 when the service is not running.

    python -m dcdrill.infra.lab.service {start|stop|restart|kill|status} SPEC.json
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import pwd
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

from dcdrill.infra.constants import LOGIN_USER, read_state_json


class UnsafeSpec(SystemExit):
    """A spec that someone other than root could have written: the supervisor runs nothing of it."""


def load(spec_path: str) -> dict:
    """The spec, once it and its folder are root's alone (roles/jvm_service jvm_service_spec_dir):
    the supervisor runs as root what it names, so a spec the service's user could rewrite would
    run anything as any user."""
    path = Path(spec_path)
    for what in (path.parent, path):
        st = what.lstat()
        if st.st_uid != 0 or st.st_mode & 0o022 or what.is_symlink():
            raise UnsafeSpec(
                f"refusing {spec_path}: {what} must be root's and writable by root alone "
                f"(owner uid {st.st_uid}, mode {oct(stat.S_IMODE(st.st_mode))})"
            )
    spec = read_state_json(path, kind=dict)
    if spec is None or not isinstance(spec.get("pidfile"), str) or not isinstance(spec.get("argv"), list):
        raise UnsafeSpec(f"refusing {spec_path}: not a service spec (no such file, or no pidfile and argv)")
    if Path(spec["pidfile"]).parent != path.parent:
        raise UnsafeSpec(f"refusing {spec_path}: its pidfile must sit beside it, not at {spec['pidfile']}")
    return spec


def running_pid(spec: dict) -> int | None:
    pidfile = Path(spec["pidfile"])
    if not pidfile.exists():
        return None
    try:
        pid = int(pidfile.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except (ValueError, OSError):
        return None
    # A recycled pid belongs to another program: the spec's `match` (the main class) must appear.
    return pid if spec.get("match", spec["argv"][0]).encode() in cmdline else None


def identity(user: str | None) -> tuple[int, int]:
    """(uid, gid) a service runs as: a uid (the lab's, no passwd entry needed) or a user name.
    Only a service's own: never root, nor the hosts' login user (it may sudo)."""
    if not user or str(user) in ("root", "0"):
        raise SystemExit("refusing to run a service as root: its spec names no unprivileged user")
    if str(user).isdigit():
        uid, gid = int(user), int(user)
    else:
        entry = pwd.getpwnam(str(user))
        uid, gid = entry.pw_uid, entry.pw_gid
    try:
        login = pwd.getpwnam(LOGIN_USER).pw_uid
    except KeyError:
        login = None
    if uid == login or uid < 1000:
        raise SystemExit(
            f"refusing to run a service as uid {uid}: not a service's own (the login user, or a system uid)"
        )
    return uid, gid


@contextlib.contextmanager
def locked(spec: dict):
    """One start, stop or restart of a service at a time: two heals cannot both start it."""
    fd = os.open(str(spec["pidfile"]) + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def start(spec: dict) -> str:
    if running_pid(spec):
        return "running"
    uid, gid = identity(spec.get("user"))
    Path(spec["log"]).parent.mkdir(parents=True, exist_ok=True)
    # In the service's own folder: never through a link it put there.
    log = os.fdopen(os.open(spec["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o640), "ab")
    proc = subprocess.Popen(
        spec["argv"],
        cwd=spec.get("cwd") or "/",
        env={**os.environ, **spec.get("env", {})},
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        user=uid,
        group=gid,
        extra_groups=[],
    )
    log.close()
    pidfile = os.open(spec["pidfile"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(pidfile, "w") as f:
        f.write(str(proc.pid))
    return "started"


def stop(spec: dict, sig: int = signal.SIGTERM, timeout_s: float = 60.0) -> str:
    pid = running_pid(spec)
    if not pid:
        return "stopped"
    os.kill(pid, sig)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    Path(spec["pidfile"]).unlink(missing_ok=True)
    return "stopped"


def _alive(pid: int) -> bool:
    """Running, not merely a zombie: a service's parent is init (start detaches it), which reaps
    in its own time, and a dead process holds no port, file lock or ZooKeeper session."""
    try:
        os.waitpid(pid, os.WNOHANG)  # ours only when this process started it
    except ChildProcessError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dcdrill.infra.lab.service", description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=["start", "stop", "restart", "kill", "status"])
    p.add_argument("spec", help="the service's JSON spec, rendered by the Ansible role")
    a = p.parse_args(argv)
    spec = load(a.spec)
    if a.action == "status":
        pid = running_pid(spec)
        print(f"{spec['name']}: {'running pid ' + str(pid) if pid else 'not running'}")
        return 0 if pid else 3
    with locked(spec):
        if a.action == "start":
            print(f"{spec['name']}: {start(spec)}")
        elif a.action == "stop":
            print(f"{spec['name']}: {stop(spec)}")
        elif a.action == "kill":
            print(f"{spec['name']}: {stop(spec, signal.SIGKILL, 5)}")
        else:
            stop(spec)
            print(f"{spec['name']}: {start(spec)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
