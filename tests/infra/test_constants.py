"""Where dcdrill keeps tools and state (infra/constants.py): the environment's choices first, the
state never inside the tools' cache; a child process works on the same package and project. How
the project is found: tests/test_packaging.py."""

import os

from dcdrill.infra import constants


def test_the_state_sits_beside_a_chosen_cache_never_in_it(monkeypatch, tmp_path):
    monkeypatch.delenv("DCDRILL_STATE", raising=False)
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "cache"))
    assert constants.cache_dir() == tmp_path / "cache"
    assert constants.state_dir() == tmp_path / "cache-state"  # a CI cache of the tools holds no key
    monkeypatch.setenv("DCDRILL_STATE", str(tmp_path / "state"))
    assert constants.state_dir() == tmp_path / "state"


def test_a_child_process_imports_this_package_and_works_on_this_project(monkeypatch, tmp_path):
    monkeypatch.setenv("DCDRILL_PROJECT", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", "/their/path")
    env = constants.child_env()
    assert env["PYTHONPATH"].split(os.pathsep) == [str(constants.PACKAGE.parent), "/their/path"]
    assert env["DCDRILL_PROJECT"] == str(tmp_path)


def test_kafka_releases_compare_by_major_and_minor():
    assert constants.kafka_release("3.9.1") == (3, 9) < constants.kafka_release("4.3.1") == (4, 3)
    assert set(constants.DEFAULT_KAFKA_VERSION.values()) <= set(constants.KAFKA_VERSIONS)
