"""Every role documents its inputs: `ansible-doc -t role` reads each role's argument specs, and
every option has a description (ansible-doc refuses the role otherwise)."""
import subprocess
import sys
from pathlib import Path

import pytest

from infra.constants import SOURCE as ROOT

ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir())


@pytest.mark.parametrize("role", ROLES)
def test_ansible_doc_reads_the_role(role):
    doc = Path(sys.executable).parent / "ansible-doc"
    res = subprocess.run([str(doc), "-t", "role", "-r", str(ROOT / "roles"), role], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and "ERROR" not in res.stderr, res.stderr
    assert f"ROLE: {role}" in res.stdout.replace("\x1b[1m", "").replace("\x1b[0m", "")
    assert "ENTRY POINT: main" in res.stdout.replace("\x1b[1m", "").replace("\x1b[0m", "")


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_have_only_argument_spec_keys(role):
    """An unquoted comma in a flow mapping turns the rest of a description into keys of their own."""
    import yaml

    allowed = {"type", "required", "default", "choices", "elements", "description", "options", "no_log"}
    spec = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    for name, option in spec["argument_specs"]["main"]["options"].items():
        assert set(option) <= allowed, (name, set(option) - allowed)
        assert isinstance(option["description"], str) and option["description"], name
