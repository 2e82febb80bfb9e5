"""infra/passwords.py: what a password may be, checked before it reaches a JAAS file, the SCRAM
users file or the KRaft format's arguments; and `lab up` refusing a chosen one that breaks the
rule before Pulumi or Ansible change anything (the real Pulumi CLI decrypts it)."""

import secrets
from pathlib import Path

import pytest

from dcdrill.infra import lifecycle, passwords, pulumi_cli
from dcdrill.infra.constants import cache_dir

ROOT = Path(__file__).resolve().parents[2]

BAD = {
    "a double quote (ends the JAAS string)": 'abcdefgh"ijkl',
    "a single quote": "abcdefgh'ijkl",
    "a comma (ends a SCRAM config entry)": "abcdefgh,ijkl",
    "a bracket": "abcdefgh]ijkl",
    "a newline (adds a user to the users file)": "abcdefghijkl\nmallory pw",
    "a space (the users file's separator)": "abcdefgh ijkl",
    "a backslash": "abcdefgh\\ijkl",
    "a semicolon (ends the JAAS entry)": "abcdefgh;ijkl",
    "a dollar (a shell or Ansible expansion)": "abcdefgh${x}jkl",
    "a brace (a Jinja expression)": "abcdefg{{ x }}",
    "too short": "short",
    "too long": "a" * 129,
    "empty": "",
    "not ASCII": "abcdéfghijkl",
    "a NUL": "abcdefgh\0ijkl",
    "not text": 123456789012,
}


@pytest.mark.parametrize("case", BAD)
def test_a_password_outside_the_rule_is_refused_by_its_key_never_its_value(case):
    value = BAD[case]
    said = passwords.refusals({"east": {"workload": value}}, "dcdrill:passwords")
    assert said == [f"dcdrill:passwords.east.workload: a password must be {passwords.RULE}"]
    assert not value or str(value) not in said[0]


def test_the_passwords_dcdrill_makes_keep_the_rule():
    assert passwords.refusals({f"u{i}": secrets.token_urlsafe(24) for i in range(200)}, "made") == []
    assert passwords.refusals({"c": {"sasl": {"admin": "Correct-horse.battery~staple+1@"}}}, "x") == []


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project of the test's own with the `local` stack, and the CLI setup built."""
    built = ROOT / ".cache" / "bin" / "pulumi"
    if not built.exists():
        pytest.skip("needs the Pulumi CLI `make setup` builds")
    for name in ("Pulumi.yaml", "Pulumi.local.yaml"):  # without this checkout's salt: a passphrase of its own
        text = (ROOT / name).read_text()
        (tmp_path / name).write_text(
            "".join(line for line in text.splitlines(True) if not line.startswith("encryptionsalt:"))
        )
    monkeypatch.setenv("DCDRILL_PROJECT", str(tmp_path))
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DCDRILL_PULUMI", str(built))
    (cache_dir() / "pulumi-home").mkdir(parents=True)
    return tmp_path


def test_lab_up_refuses_a_chosen_secret_password_outside_the_rule_before_pulumi_up(project, monkeypatch):
    pulumi_cli.ensure_stack("local")
    pulumi_cli.run("local", "config", "set", "--secret", "--path", "dcdrill:passwords.main.workload", 'pw"; x')

    def tripwire(*a, **k):
        raise AssertionError("pulumi up ran")

    monkeypatch.setattr(pulumi_cli, "up", tripwire)
    monkeypatch.setattr(type(lifecycle.stacks.backend("local")), "require_support", lambda self: None)
    with pytest.raises(ValueError, match=r"dcdrill:passwords.main.workload: a password must be 12 to 128") as refused:
        lifecycle.up("local")
    assert 'pw"; x' not in str(refused.value)
