"""The `dcdrill` command itself (dcdrill/cli.py): every subcommand's help, the verifier-only entry, and a reader
that leaves early."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    return subprocess.run([sys.executable, "-m", "dcdrill.cli", *args], capture_output=True, text=True, cwd=ROOT)


def test_every_command_has_help():
    for cmd in ("plan", "lab", "status", "workload", "verify", "history", "drill", "experiment"):
        res = run(cmd, "--help")
        assert res.returncode == 0 and "usage:" in res.stdout


def test_version_and_verify_without_the_lab_modules():
    import importlib.metadata
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "dcdrill.cli", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0 and res.stdout.strip() == f"dcdrill {importlib.metadata.version('dcdrill')}"
    # `dcdrill verify` parses with spark's subcommands alone: neither the lab's nor the drill's modules load
    probe = (
        "import sys; from dcdrill import cli; p = cli.build_parser(verifier_only=True); p.parse_args(['verify', 'x']); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pulumi', 'ansible') "
        "or m.startswith(('dcdrill.chaos', 'dcdrill.infra.schema'))))"
    )
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr


@pytest.mark.parametrize("argv", [["plan", "--stack", "local", "--json"], ["schema"]])
def test_a_reader_that_leaves_early_ends_the_command_without_a_traceback(argv):
    """`dcdrill plan --json | head`: the pipe closes before dcdrill has written; it exits as a
    shell-killed writer would (141), saying nothing."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "dcdrill.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()  # the reader is gone before the first line
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 141 and "Traceback" not in err and "BrokenPipe" not in err, err
