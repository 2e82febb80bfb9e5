"""dcdrill's tests. ROOT: the checkout they run in."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ansible_localhost(module: str, args: str, *extra_vars: str) -> subprocess.CompletedProcess:
    """One Ansible module run on this machine (`ansible localhost -m MODULE -a ARGS -e ...`), as a
    role's task would run it: for rendering a role's templates and defaults in a test."""
    argv = [str(Path(sys.executable).parent / "ansible"), "localhost", "-m", module, "-a", args]
    for value in extra_vars:
        argv += ["-e", value]
    env = {**os.environ, "ANSIBLE_LOCALHOST_WARNING": "False", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False"}
    return subprocess.run(argv, capture_output=True, text=True, env=env)
