"""The verifier's JVM started in the background at the lowest priority while a drill runs
(session.start_early), then given its command's priority back (session.await_early)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Its own process: a process launches one JVM for Spark, once.
SCRIPT = """
import json, os
from pathlib import Path
from dcdrill.spark import session

os.setpriority(os.PRIO_PROCESS, 0, 10)  # the command's own priority: neither the default nor the lowest

def nices(pid):
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.add(int(task.joinpath("stat").read_text().rsplit(")", 1)[1].split()[16]))
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return sorted(found)

session.start_early()
session._JVM.early.join()
pid = session.jvm_process().pid
low = nices(pid)
session.await_early()
back = nices(pid)
count = session.session().range(10).count()
print(json.dumps({"low": low, "back": back, "same_jvm": session.jvm_process().pid == pid, "count": count,
                  "main_thread": os.getpriority(os.PRIO_PROCESS, 0)}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="raising a priority back needs root, as the lab does")
def test_the_early_jvm_runs_at_the_lowest_priority_until_the_verify_needs_it():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["low"] == [19], out  # every thread of the JVM, its compilers and GC included
    assert out["back"] == [10], out
    # The verify's session is the one started early: no second JVM, and it runs jobs.
    assert out["same_jvm"] and out["count"] == 10, out
    assert out["main_thread"] == 10, out  # only the starting thread was lowered
