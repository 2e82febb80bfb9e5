"""A KRaft cluster's identities (infra/kraft.py): made once, kept across runs, extended for a
new controller, and handed to kafka-storage format in node-id order."""

import base64
import json

from dcdrill.infra import kraft


def test_uuids_are_kafkas_16_bytes_and_none_reads_as_a_flag():
    ids = {kraft.new_uuid() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 and not i.startswith("-") for i in ids)


def test_the_ids_survive_a_second_run_and_a_new_controller_gets_one_of_its_own(tmp_path):
    path = tmp_path / "stack" / "kraft.json"
    first = kraft.ensure(path, ["ctl2", "ctl1"])
    assert list(first["directory_ids"]) == ["ctl1", "ctl2"]
    written = path.read_bytes()
    assert kraft.ensure(path, ["ctl1", "ctl2"]) == first and path.read_bytes() == written  # nothing rewritten
    grown = kraft.ensure(path, ["ctl1", "ctl2", "ctl3"])
    assert grown["cluster_id"] == first["cluster_id"]
    assert {k: grown["directory_ids"][k] for k in ("ctl1", "ctl2")} == first["directory_ids"]
    assert grown["directory_ids"]["ctl3"] not in first["directory_ids"].values()
    assert json.loads(path.read_text()) == grown


def test_initial_controllers_lists_id_host_port_and_directory_by_node_id(tmp_path):
    ids = kraft.ensure(tmp_path / "kraft.json", ["ctl2.dc-b.lab", "ctl1.dc-a.lab"])["directory_ids"]
    assert kraft.initial_controllers({"ctl2.dc-b.lab": 1002, "ctl1.dc-a.lab": 1001}, ids) == (
        f"1001@ctl1.dc-a.lab:9094:{ids['ctl1.dc-a.lab']},1002@ctl2.dc-b.lab:9094:{ids['ctl2.dc-b.lab']}"
    )
