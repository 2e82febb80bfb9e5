"""Every role documents its inputs: `ansible-doc -t role` reads each role's argument specs, and
every option has a description (ansible-doc refuses the role otherwise)."""
import subprocess
import sys
from pathlib import Path

import pytest

from infra.constants import ROOT

ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir())


@pytest.mark.parametrize("role", ROLES)
def test_ansible_doc_reads_the_role(role):
    doc = Path(sys.executable).parent / "ansible-doc"
    res = subprocess.run([str(doc), "-t", "role", "-r", str(ROOT / "roles"), role], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and "ERROR" not in res.stderr, res.stderr
    assert f"ROLE: {role}" in res.stdout.replace("\x1b[1m", "").replace("\x1b[0m", "")
    assert "ENTRY POINT: main" in res.stdout.replace("\x1b[1m", "").replace("\x1b[0m", "")
