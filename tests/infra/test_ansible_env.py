"""infra/ansible.py: Ansible runs with an environment of its own, and nothing of this process's
secrets lands in ansible-runner's files. A real play through ansible-runner, on localhost."""

import json
import os
import sys
import tempfile
from pathlib import Path

from dcdrill.infra import ansible

MARKER = "dcdrill-marker-3f9a1c"
PLAY = """
- hosts: all
  gather_facts: false
  connection: local
  tasks:
    - ansible.builtin.copy:
        dest: "{out}"
        content: "{{{{ {{'aws': lookup('env', 'AWS_SECRET_ACCESS_KEY'),
                   'pulumi': lookup('env', 'PULUMI_CONFIG_PASSPHRASE'),
                   'token': lookup('env', 'GITHUB_TOKEN'), 'home': lookup('env', 'HOME')}} | to_json }}}}"
"""


def play(tmp_path: Path, aws: bool) -> tuple[dict, Path]:
    out = tmp_path / "seen.json"
    (tmp_path / "play.yml").write_text(PLAY.format(out=out))
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"localhost": {"ansible_python_interpreter": sys.executable}}}}))
    before = set(Path(tempfile.gettempdir()).glob("dcdrill-ansible-*"))
    stats = ansible.run_playbook(tmp_path / "runner", tmp_path / "play.yml", inventory, aws=aws, quiet=True)
    assert stats["localhost"].get("failures", 0) == 0
    assert set(Path(tempfile.gettempdir()).glob("dcdrill-ansible-*")) == before  # its artifacts are gone
    return json.loads(out.read_text()), tmp_path / "runner"


def files_holding(folder: Path, needle: str) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


def test_no_secret_of_this_process_reaches_ansible_or_its_runners_files(tmp_path, monkeypatch):
    for var in ("AWS_SECRET_ACCESS_KEY", "PULUMI_CONFIG_PASSPHRASE", "GITHUB_TOKEN"):
        monkeypatch.setenv(var, MARKER)
    seen, private = play(tmp_path, aws=False)
    assert seen == {"aws": "", "pulumi": "", "token": "", "home": os.environ["HOME"]}
    assert (private / "ansible.log").exists() and not files_holding(private, MARKER)
    assert oct((private / "ansible.log").stat().st_mode & 0o777) == "0o600"


def test_an_aws_stacks_play_gets_the_aws_credentials_its_ssm_proxy_needs_and_nothing_else(tmp_path, monkeypatch):
    for var in ("AWS_SECRET_ACCESS_KEY", "PULUMI_CONFIG_PASSPHRASE", "GITHUB_TOKEN"):
        monkeypatch.setenv(var, MARKER)
    seen, private = play(tmp_path, aws=True)
    assert seen["aws"] == MARKER and seen["pulumi"] == seen["token"] == ""
    assert not files_holding(private, MARKER)


def test_child_env_keeps_what_the_runner_set_and_drops_what_was_only_inherited(monkeypatch):
    monkeypatch.setenv("CI_JOB_TOKEN", "t")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    env = {**os.environ, "ANSIBLE_STDOUT_CALLBACK": "awx_display", "PATH": "/venv/bin:" + os.environ["PATH"]}
    kept = ansible.child_env(env, aws=False)
    assert "CI_JOB_TOKEN" not in kept and kept["LC_ALL"] == "C.UTF-8"
    assert kept["ANSIBLE_STDOUT_CALLBACK"] == "awx_display" and kept["PATH"].startswith("/venv/bin:")
