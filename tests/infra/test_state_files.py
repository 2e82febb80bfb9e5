"""dcdrill's own state files, corrupt: each read names the file and what is wrong (BadStateFile,
exit 2), never a traceback; each write survives a crash whole, its folder synced too."""

import json
import os
import stat

import pytest

from dcdrill.infra import constants, kraft
from dcdrill.infra.constants import BadStateFile, read_state_json, write_json_atomically
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.lab import service, shaper
from dcdrill.infra.observe import open_drills

GARBLED = {
    "not JSON": (b'["runs/a", ', "not JSON"),
    "binary": (b"\xff\xfe\x00garbage", "cannot be read"),
    "the wrong kind": (b'{"runs/a": 1}', "holds a JSON dict, not a list"),
}


@pytest.fixture
def stack_state(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_STATE", str(tmp_path / "state"))
    folder = tmp_path / "state" / "stacks" / "local"
    folder.mkdir(parents=True)
    return folder


@pytest.mark.parametrize("case", sorted(GARBLED))
def test_a_corrupt_open_drills_file_is_named_by_every_reader(stack_state, case):
    data, said = GARBLED[case]
    (stack_state / "open-drills.json").write_bytes(data)
    for read in (lambda: open_drills.listed("local"), lambda: open_drills.note("local", "runs/b")):
        with pytest.raises(BadStateFile, match=rf"open-drills.json: .*{said}"):
            read()
    assert (stack_state / "open-drills.json").read_bytes() == data  # left as it was, for the user to see


def test_open_drills_entries_must_be_record_locations(stack_state):
    (stack_state / "open-drills.json").write_text('["runs/a", 7]')
    with pytest.raises(BadStateFile, match="every entry must be a record's location"):
        open_drills.listed("local")


def test_a_corrupt_inventory_kraft_ids_or_shaper_state_is_named(tmp_path):
    (tmp_path / "inventory.json").write_text('{"all": ')
    with pytest.raises(BadStateFile, match="inventory.json: not JSON"):
        Inventory.load(tmp_path / "inventory.json")
    (tmp_path / "kraft.json").write_text("[1, 2]")
    with pytest.raises(BadStateFile, match="kraft.json: holds a JSON list, not a dict"):
        kraft.ensure(tmp_path / "kraft.json", ["k1"])
    (tmp_path / "shaper.json").write_text('{"kind": "teleport", "prefix": "10.77", "dcs": 3}')
    with pytest.raises(BadStateFile, match="shaper.json: not a shaper's state"):
        shaper.installed(tmp_path)
    (tmp_path / "shaper.json").write_text("{")
    with pytest.raises(BadStateFile, match="shaper.json: not JSON"):
        shaper.installed(tmp_path)


def test_a_service_spec_that_is_not_one_is_refused(tmp_path):
    folder = tmp_path / "services"
    folder.mkdir(mode=0o755)
    (folder / "kafka.json").write_text("not a spec")
    (folder / "kafka.json").chmod(0o644)
    os.chown(folder, 0, 0)
    with pytest.raises(BadStateFile, match="kafka.json: not JSON"):
        service.load(str(folder / "kafka.json"))
    (folder / "kafka.json").write_text('{"pidfile": "/elsewhere/kafka.pid"}')
    with pytest.raises(service.UnsafeSpec, match="not a service spec"):
        service.load(str(folder / "kafka.json"))


def test_a_missing_state_file_is_its_default_and_a_write_syncs_the_file_and_its_folder(tmp_path, monkeypatch):
    assert read_state_json(tmp_path / "none.json", default=[]) == []
    synced = []
    real = os.fsync
    monkeypatch.setattr(constants.os, "fsync", lambda fd: (synced.append(stat.S_ISDIR(os.fstat(fd).st_mode)), real(fd)))
    write_json_atomically(tmp_path / "state.json", {"a": 1})
    assert synced == [False, True]  # the file, then the folder that holds its new name
    assert json.loads((tmp_path / "state.json").read_text()) == {"a": 1} and not list(tmp_path.glob("*.tmp"))
