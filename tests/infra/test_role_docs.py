"""Every role documents its inputs: `ansible-doc -t role` reads each role's argument specs, and
every option has a description (ansible-doc refuses the role otherwise)."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests import ROOT

ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir())


@pytest.mark.parametrize("role", ROLES)
def test_ansible_doc_reads_the_role(role):
    doc = Path(sys.executable).parent / "ansible-doc"
    res = subprocess.run(
        [str(doc), "-t", "role", "-r", str(ROOT / "roles"), role], capture_output=True, text=True, timeout=120
    )
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


def test_the_roles_build_as_a_collection_installable_from_a_requirements_file(tmp_path):
    """galaxy.yml: `ansible-galaxy collection build` packs roles/ (and nothing of the tool around
    them); installed from a requirements file, every role is found by its FQCN, documented, and a
    playbook that uses them passes the syntax check."""
    bin_dir = Path(sys.executable).parent
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "ANSIBLE_COLLECTIONS_PATH": str(tmp_path / "collections"),
        "HOME": str(tmp_path),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
    }

    def run(*argv):
        return subprocess.run(
            [str(bin_dir / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path
        )

    built = run("ansible-galaxy", "collection", "build", "--output-path", str(tmp_path), str(ROOT))
    assert built.returncode == 0, built.stderr
    tarball = next(tmp_path.glob("dcdrill-kafka-*.tar.gz"))
    import tarfile

    members = tarfile.open(tarball).getnames()
    assert "roles/kafka_broker/tasks/main.yml" in members and "meta/runtime.yml" in members
    assert not any(m.split("/")[0] in ("infra", "spark", "tests", ".cache", ".venv", "site.yml") for m in members)
    (tmp_path / "requirements.yml").write_text(f"collections:\n  - name: {tarball}\n    type: file\n")
    installed = run(
        "ansible-galaxy", "collection", "install", "-r", "requirements.yml", "-p", str(tmp_path / "collections")
    )
    assert installed.returncode == 0, installed.stderr
    for role in ROLES:
        doc = run("ansible-doc", "-t", "role", f"dcdrill.kafka.{role}")
        assert doc.returncode == 0 and "ENTRY POINT: main" in doc.stdout.replace("\x1b[1m", "").replace(
            "\x1b[0m", ""
        ), doc.stderr
    # Every role, its modules included (a collection's roles find them in its plugins/modules).
    (tmp_path / "play.yml").write_text(
        "- hosts: kafka_broker\n  gather_facts: false\n"
        "  roles: [dcdrill.kafka.java, dcdrill.kafka.kafka_broker]\n"
        "- hosts: client\n  gather_facts: false\n"
        "  roles: [dcdrill.kafka.kafka_topics, dcdrill.kafka.kafka_access]\n"
    )
    (tmp_path / "hosts.ini").write_text(
        "[kafka_broker]\nb1 ansible_connection=local\n[client]\nc1 ansible_connection=local\n"
    )
    checked = run("ansible-playbook", "--syntax-check", "-i", "hosts.ini", "play.yml")
    assert checked.returncode == 0, checked.stdout + checked.stderr
