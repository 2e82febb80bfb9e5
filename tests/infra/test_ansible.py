"""How dcdrill runs Ansible (infra/ansible.py)."""

from pathlib import Path

from dcdrill.infra import ansible


def test_the_ansible_strategy_is_mitogens_unless_the_user_says_otherwise(monkeypatch):
    monkeypatch.delenv("DCDRILL_ANSIBLE_STRATEGY", raising=False)
    env = ansible.strategy_env()
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    assert (Path(env["ANSIBLE_STRATEGY_PLUGINS"]) / "mitogen_linear.py").is_file()
    monkeypatch.setenv("DCDRILL_ANSIBLE_STRATEGY", "linear")
    assert ansible.strategy_env() == {"ANSIBLE_STRATEGY": "linear"}
