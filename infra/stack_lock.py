"""One drill at a time per stack: `drill`, `heal`, `lab up` and `lab down` each hold the stack's
lock (flock) for as long as they run, and so do the processes a drill starts (`chaos run`, its
rollbacks): they inherit the lock's descriptor, so the lock is free only once every one of them
has ended. A second command exits 2 at once, naming the holder.

The lock file also says who holds it ({pid, command, run, since_ms}). That text is only shown to
the user: the kernel's flock decides who holds the lock, so a forged or stale text decides nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
from pathlib import Path

from dcdrill.infra.constants import now_ms, state_dir

STACK_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # Pulumi's own rule for a stack's name


class StackBusy(ValueError):
    """Another command holds the stack (exit 2)."""


def path(stack: str) -> Path:
    """The stack's lock file, apart from its state folder (which `lab down` empties)."""
    if not STACK_NAME.match(stack):
        raise ValueError(f"stack name {stack!r}: letters, digits, '.', '_' and '-' only")
    return state_dir() / "locks" / f"{stack}.lock"


def holder(stack: str) -> dict | None:
    """What the lock file says of its holder, or None (no file, or nothing a holder wrote)."""
    try:
        said = json.loads(path(stack).read_text() or "null")
    except (OSError, ValueError):
        return None
    return said if isinstance(said, dict) else None


def describe(said: dict | None) -> str:
    """The holder, in words: pid, command, run and since when, and whether its pid still runs."""
    if not said:
        return "a process that wrote nothing of itself"
    pid = said.get("pid")
    alive = isinstance(pid, int) and pid > 0 and Path(f"/proc/{pid}").exists()
    since = said.get("since_ms")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since / 1000)) if isinstance(since, int) else "?"
    run = f", run {said['run']}" if said.get("run") else ""
    state = "" if alive else "; that pid has ended, and a process it started still holds the lock"
    return f"pid {pid} ({said.get('command')}{run}) since {when}{state}"


@contextlib.contextmanager
def held(stack: str, command: str, run: Path | None = None, force: bool = False):
    """Hold `stack`'s lock for the block; yields the descriptor a child process keeps it with
    (subprocess's pass_fds). StackBusy at once when another process holds it; with `force`, the
    block runs without the lock (the holder is said in a warning)."""
    lock = path(stack)
    lock.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:  # a symlink put in its place, or a folder that is not ours
        raise ValueError(f"{lock}: the stack's lock cannot be opened ({exc.strerror})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            said = describe(holder(stack))
            if not force:
                raise StackBusy(
                    f"stack {stack} is busy: {said}. One drill, heal or lab command at a time per stack"
                    + (" (dcdrill heal --force goes ahead anyway)" if command == "heal" else "")
                ) from None
            print(f"dcdrill: warning: going ahead without stack {stack}'s lock, held by {said}", flush=True)
            yield None
            return
        os.ftruncate(fd, 0)
        text = {"pid": os.getpid(), "command": command, "run": str(run) if run else None, "since_ms": now_ms()}
        os.pwrite(fd, json.dumps(text).encode() + b"\n", 0)
        yield fd  # the text stays: a child that kept the descriptor still holds the lock it names
    finally:
        os.close(fd)
