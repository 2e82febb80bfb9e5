"""The lab's service supervisor: what systemd does on a real host, for hosts without systemd.

The Ansible roles render one JSON spec per service ({name, argv, match, env, cwd, log, pidfile}) and
call `python -m dcdrill.infra.lab.service start SPEC` inside the host's namespace; the chaos driver's
heal restarts a killed service with the same command. Exit codes follow systemctl's habits:
status exits 3 when the service is not running.

    python -m dcdrill.infra.lab.service {start|stop|restart|kill|status} SPEC.json
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import signal
import subprocess
import sys
import time
from pathlib import Path


def load(spec_path: str) -> dict:
    return json.loads(Path(spec_path).read_text())


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
    Never root: a spec without a user is refused."""
    if not user or str(user) in ("root", "0"):
        raise SystemExit("refusing to run a service as root: its spec names no unprivileged user")
    if str(user).isdigit():
        return int(user), int(user)
    entry = pwd.getpwnam(str(user))
    return entry.pw_uid, entry.pw_gid


def start(spec: dict) -> str:
    if running_pid(spec):
        return "running"
    Path(spec["log"]).parent.mkdir(parents=True, exist_ok=True)
    log = open(spec["log"], "ab")
    uid, gid = identity(spec.get("user"))
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
    Path(spec["pidfile"]).write_text(str(proc.pid))
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
