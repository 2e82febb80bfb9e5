"""`dcdrill drill --check` on an AWS stack names what the control lacks to reach its hosts, and
how to install it, before anything starts (exit 2); it sends nothing anywhere to find out."""

import os
import subprocess
import sys

import pytest

from dcdrill.infra.aws import prerequisites

DCDRILL = [sys.executable, "-m", "dcdrill.cli"]


@pytest.fixture
def bare(tmp_path, monkeypatch):
    """No plugin, no credentials: PATH without the plugin, a cache setup has not filled, HOME
    without an AWS profile."""
    for key in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    return tmp_path


def test_a_bare_control_lacks_both(bare):
    lacking = prerequisites.missing()
    assert [m.split(" (")[0] for m in lacking] == ["AWS's session-manager-plugin", "AWS credentials"]
    assert "`dcdrill setup` builds it" in lacking[0]


def test_the_plugin_setup_built_counts(bare):
    built = bare / "cache" / "bin" / "session-manager-plugin"
    built.parent.mkdir(parents=True)
    built.write_text("#!/bin/sh\n")
    built.chmod(0o755)
    assert [m.split(" (")[0] for m in prerequisites.missing()] == ["AWS credentials"]


def test_each_piece_once_there_is_no_longer_named(aws_control, monkeypatch):
    for key, value in aws_control.items():
        monkeypatch.setenv(key, value)
    assert prerequisites.missing() == []


def test_check_on_an_aws_stack_exits_2_naming_them(bare):
    res = subprocess.run(
        DCDRILL + ["drill", "--stack", "aws-3az-tiebreaker", "--experiment", "kill-dc", "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert res.returncode == 2, res.stdout + res.stderr
    assert (
        "cannot drive an AWS stack yet" in res.stderr
        and "session-manager-plugin" in res.stderr
        and "credentials" in res.stderr
    )


def test_without_the_aws_extra_the_extra_is_named_not_a_traceback(bare, monkeypatch):
    """A recipe that installed dcdrill[verify] alone (issue 69, item 1): the check names the extra."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "botocore" else real(name, *a))
    lacking = prerequisites.missing()
    assert "botocore (the `aws` extra): pip install 'dcdrill[aws,verify]'" in lacking
    assert not any("credentials" in m for m in lacking)  # not asked of a boto3 that is not there
