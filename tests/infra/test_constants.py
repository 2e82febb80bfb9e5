"""Where dcdrill keeps tools, state and the project (infra/constants.py): the environment's
choices first, the state never inside the tools' cache, and a clear error outside any project."""

import os

import pytest

from dcdrill.infra import constants


def test_the_state_sits_beside_a_chosen_cache_never_in_it(monkeypatch, tmp_path):
    monkeypatch.delenv("DCDRILL_STATE", raising=False)
    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path / "cache"))
    assert constants.cache_dir() == tmp_path / "cache"
    assert constants.state_dir() == tmp_path / "cache-state"  # a CI cache of the tools holds no key
    monkeypatch.setenv("DCDRILL_STATE", str(tmp_path / "state"))
    assert constants.state_dir() == tmp_path / "state"


def test_the_project_is_the_nearest_folder_with_a_pulumi_yaml(monkeypatch, tmp_path):
    monkeypatch.delenv("DCDRILL_PROJECT", raising=False)
    (tmp_path / "repo" / "ci" / "deep").mkdir(parents=True)
    (tmp_path / "repo" / constants.PROJECT_FILE).write_text("name: dcdrill\n")
    monkeypatch.chdir(tmp_path / "repo" / "ci" / "deep")
    assert constants.project_dir() == (tmp_path / "repo").resolve()
    monkeypatch.setenv("DCDRILL_PROJECT", str(tmp_path / "elsewhere"))
    assert constants.project_dir() == (tmp_path / "elsewhere").resolve()


def test_outside_a_project_and_a_checkout_the_error_says_how_to_make_one(monkeypatch, tmp_path):
    monkeypatch.delenv("DCDRILL_PROJECT", raising=False)
    monkeypatch.setattr(constants, "IN_CHECKOUT", False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(constants.NoProject, match="`dcdrill init` makes a project there"):
        constants.project_dir()


def test_a_child_process_imports_this_package_and_works_on_this_project(monkeypatch, tmp_path):
    monkeypatch.setenv("DCDRILL_PROJECT", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", "/their/path")
    env = constants.child_env()
    assert env["PYTHONPATH"].split(os.pathsep) == [str(constants.PACKAGE.parent), "/their/path"]
    assert env["DCDRILL_PROJECT"] == str(tmp_path)


def test_kafka_releases_compare_by_major_and_minor():
    assert constants.kafka_release("3.9.1") == (3, 9) < constants.kafka_release("4.3.1") == (4, 3)
    assert set(constants.DEFAULT_KAFKA_VERSION.values()) <= set(constants.KAFKA_VERSIONS)
