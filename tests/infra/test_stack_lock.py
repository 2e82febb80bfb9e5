"""infra/stack_lock.py and the commands that hold it: one drill, heal or lab command at a time per
stack. The holders here are real processes; the commands run in this process with their actions
replaced by a tripwire, so a command that forgot the lock fails the test without touching a lab."""

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dcdrill import cli
from dcdrill.infra import stack_lock

ROOT = Path(__file__).resolve().parents[2]

# A holder: takes the lock, says so, then (optionally) starts a child that keeps the lock's
# descriptor and outlives it, as a drill's chaos run does.
HOLDER = """
import subprocess, sys, time
from pathlib import Path
from dcdrill.infra import stack_lock
with stack_lock.held("local", "drill", Path("/runs/r1")) as fd:
    if sys.argv[1] == "child":
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], pass_fds=(fd,))
        print("held", flush=True)
        sys.exit(0)
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def hold(cache: Path, mode: str = "self") -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, mode],
        cwd=ROOT,
        env={**os.environ, "DCDRILL_CACHE": str(cache)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def children_of_holders() -> None:
    subprocess.run(["pkill", "-f", "^" + sys.executable + " -c import time; time.sleep\\(60\\)"], check=False)


def test_a_second_holder_is_refused_at_once_naming_the_first(cache):
    proc = hold(cache)
    try:
        started = time.monotonic()
        with pytest.raises(stack_lock.StackBusy) as busy:
            with stack_lock.held("local", "lab up"):
                pass
        assert time.monotonic() - started < 1
        said = str(busy.value)
        assert f"pid {proc.pid} (drill, run /runs/r1) since 20" in said and "has ended" not in said
    finally:
        proc.kill()
        proc.wait()
    with stack_lock.held("local", "lab up") as fd:  # the kernel freed it with its holder
        assert fd is not None and stack_lock.holder("local")["pid"] == os.getpid()


def test_a_child_that_kept_the_descriptor_holds_the_lock_after_its_starter_ended(cache):
    proc = hold(cache, "child")
    proc.wait(10)
    try:
        with pytest.raises(stack_lock.StackBusy, match="that pid has ended, and a process it started still holds"):
            with stack_lock.held("local", "heal"):
                pass
    finally:
        children_of_holders()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with stack_lock.held("local", "heal"):
                break
        except stack_lock.StackBusy:
            time.sleep(0.1)
    else:
        pytest.fail("the lock was not freed when the last process holding it ended")


def test_a_forged_holder_text_decides_nothing(cache):
    path = stack_lock.path("local")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"pid": os.getpid(), "command": "drill", "since_ms": 1}))
    with stack_lock.held("local", "heal") as fd:  # nobody holds the flock: the text is not the lock
        with pytest.raises(BlockingIOError), open(path) as other:  # and now this process holds it
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert fd >= 0
    path.write_text("{not json")
    with stack_lock.held("local", "heal"):
        pass


def test_a_symlink_in_the_locks_place_is_refused(cache, tmp_path):
    path = stack_lock.path("local")
    path.parent.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    path.symlink_to(target)
    with pytest.raises(ValueError, match="the stack's lock cannot be opened"):
        with stack_lock.held("local", "heal"):
            pass
    assert target.read_text() == "keep"


@pytest.mark.parametrize("name", ["../x", "a/b", "", "-x", "x" * 101])
def test_a_stack_name_that_is_not_one_is_refused(cache, name):
    with pytest.raises(ValueError, match="stack name"):
        stack_lock.path(name)


def tripwire(*_a, **_k):
    raise AssertionError("the command acted while another held the stack")


COMMANDS = {
    "heal": ["heal", "--stack", "local"],
    "lab up": ["lab", "up", "--stack", "local"],
    "lab down": ["lab", "down", "--stack", "local"],
    "drill": ["drill", "--stack", "local"],
}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_that_changes_a_stack_exits_2_while_another_holds_it(cache, monkeypatch, capsys, command):
    from dcdrill import drill
    from dcdrill.chaos.faults import recovery
    from dcdrill.infra import lifecycle
    from dcdrill.infra.lab.backend import LabBackend

    for module, name in [
        (recovery, "heal_stack"),
        (recovery, "require_healed"),
        (lifecycle, "up"),
        (lifecycle, "down"),
        (drill, "_drills"),
    ]:
        monkeypatch.setattr(module, name, tripwire)
    monkeypatch.setattr(LabBackend, "require_support", lambda self: None)
    monkeypatch.setattr(drill, "_require_verifier", lambda: None)
    proc = hold(cache)
    try:
        assert cli.main(COMMANDS[command]) == 2
    finally:
        proc.kill()
        proc.wait()
    err = capsys.readouterr().err
    assert f"stack local is busy: pid {proc.pid} (drill, run /runs/r1)" in err, err


def test_heal_force_goes_ahead_naming_the_holder(cache, monkeypatch, capsys):
    from dcdrill.chaos.faults import recovery

    healed = []
    monkeypatch.setattr(recovery, "heal_stack", lambda stack, only, say: healed.append(stack) or [])
    proc = hold(cache)
    try:
        assert cli.main(["heal", "--stack", "local"]) == 2
        assert healed == []
        assert cli.main(["heal", "--stack", "local", "--force"]) == 0
    finally:
        proc.kill()
        proc.wait()
    assert healed == ["local"]
    assert f"going ahead without stack local's lock, held by pid {proc.pid}" in capsys.readouterr().out
