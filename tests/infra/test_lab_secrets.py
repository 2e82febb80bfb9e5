"""The lab stacks' Pulumi secrets: a passphrase of this machine's own, in a file Pulumi is
pointed at, and state that stays on this machine unless the user says otherwise."""

import stat
from pathlib import Path

import pytest

from dcdrill.infra import pulumi_cli
from dcdrill.infra.lab.backend import lab_passphrase_file


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "cache"))
    for var in ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE", "PULUMI_BACKEND_URL"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "cache"


def test_the_passphrase_is_random_per_machine_kept_and_readable_by_its_owner_only(tmp_path):
    one, two = lab_passphrase_file(tmp_path / "a"), lab_passphrase_file(tmp_path / "b")
    assert one.read_text() != two.read_text() and len(one.read_text()) >= 40
    assert lab_passphrase_file(tmp_path / "a").read_text() == one.read_text()  # made once
    assert stat.S_IMODE(one.stat().st_mode) == 0o600 and stat.S_IMODE(one.parent.stat().st_mode) == 0o700


def test_a_passphrase_file_others_may_read_or_a_link_in_its_place_is_refused(tmp_path):
    path = lab_passphrase_file(tmp_path / "a")
    path.chmod(0o644)
    with pytest.raises(ValueError, match="only you read"):
        lab_passphrase_file(tmp_path / "a")
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(ValueError, match="only you read"):
        lab_passphrase_file(tmp_path / "a")


def test_pulumi_gets_the_files_name_and_never_the_passphrase(cache):
    e = pulumi_cli.env("local")
    assert "PULUMI_CONFIG_PASSPHRASE" not in e
    secret = open(e["PULUMI_CONFIG_PASSPHRASE_FILE"]).read()
    assert secret not in "\0".join(f"{k}={v}" for k, v in e.items())
    # both in the state folder, beside the tools' and never in it
    state = cache.with_name("cache-state")
    assert e["PULUMI_BACKEND_URL"] == f"file://{state / 'pulumi-state'}"
    assert Path(e["PULUMI_CONFIG_PASSPHRASE_FILE"]) == state / "secrets" / "lab-passphrase"


def test_a_lab_stack_refuses_a_backend_off_the_machine_unless_asked(cache, monkeypatch):
    monkeypatch.setenv("PULUMI_BACKEND_URL", "s3://their-bucket/state")
    with pytest.raises(pulumi_cli.RemoteStateRefused, match="DCDRILL_LAB_REMOTE_BACKEND=1"):
        pulumi_cli.env("local")
    monkeypatch.setenv("DCDRILL_LAB_REMOTE_BACKEND", "1")
    assert pulumi_cli.env("local")["PULUMI_BACKEND_URL"] == "s3://their-bucket/state"


def test_a_lab_stack_ignores_a_pulumi_login_and_keeps_its_state_here(cache, monkeypatch, tmp_path):
    home = tmp_path / "pulumi-home"
    home.mkdir()
    (home / "credentials.json").write_text('{"current": "https://api.pulumi.com"}')
    monkeypatch.setenv("PULUMI_HOME", str(home))
    monkeypatch.setattr(pulumi_cli, "is_built", lambda exe: False)  # the user's own CLI
    assert pulumi_cli.env("local")["PULUMI_BACKEND_URL"].startswith("file://")
