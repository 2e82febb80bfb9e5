"""Fixtures shared by the infra tests."""

import pytest


@pytest.fixture
def stack_dir(tmp_path, monkeypatch):
    """A project folder of the test's own: stacks written there are the ones `--stack` finds."""
    monkeypatch.setenv("DCDRILL_PROJECT", str(tmp_path))
    return tmp_path
