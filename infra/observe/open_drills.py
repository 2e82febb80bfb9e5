"""The drill records of a stack that may have left something behind: a fault not yet undone, or
a workload process still running. A drill notes its record here before its first change to the
cluster, and heal forgets it once nothing of it is left, so after any crash `dcdrill heal
--stack S` knows where to look, and `lab up` and `drill` refuse to start on a broken stack.

Kept beside the stack's inventory, written atomically under a lock (like the record's fault state).
"""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path

from dcdrill.infra import ansible
from dcdrill.infra.constants import BadStateFile, read_state_json, write_json_atomically


def _path(stack: str) -> Path:
    return ansible.inventory_path(stack).parent / "open-drills.json"


@contextmanager
def _locked(stack: str):
    path = _path(stack)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        records = _valid(path, read_state_json(path, [], list))
        yield records
        write_json_atomically(path, records)


def note(stack: str, location: str) -> None:
    """Before a drill changes anything: its record is one heal must look at."""
    with _locked(stack) as records:
        if location not in records:
            records.append(location)


def forget(stack: str, location: str) -> None:
    """Nothing of this drill is left in the cluster."""
    with _locked(stack) as records:
        if location in records:
            records.remove(location)


def listed(stack: str) -> list[str]:
    """The records noted and not yet forgotten, oldest first."""
    path = _path(stack)
    return _valid(path, read_state_json(path, [], list))


def _valid(path: Path, records: list) -> list:
    if not all(isinstance(r, str) and r for r in records):
        raise BadStateFile(f"{path}: every entry must be a record's location (a string); restore it or remove it")
    return records


def forget_all(stack: str) -> None:
    """The stack is gone (`lab down`, `pulumi destroy`): nothing of any drill is left to heal."""
    _path(stack).unlink(missing_ok=True)
