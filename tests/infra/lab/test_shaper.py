"""The link shaper's pure parts: the table every DC pair gets from the stack config, and the tc
commands the netem shaper would run (this machine's kernel has no sch_netem, so the lab tests
exercise the forwarder; tests/infra/test_lab_links.py)."""

import yaml

from dcdrill.infra import schema, stack
from dcdrill.infra.lab import layout, shaper
from dcdrill.infra.lab.shaper import LinkShape
from tests.infra.test_schema import ROOT


def settings_and_topology(**lab):
    doc = yaml.safe_load((ROOT / "Pulumi.local.yaml").read_text())
    doc["config"]["dcdrill:lab"] = lab
    return schema.parse(doc["config"]).lab, stack.topology_of(doc["config"], "local")


def test_the_table_round_trips_through_the_forwarder_file_format():
    settings, t = settings_and_topology(latencyMs=20, lossPct=2.5)
    table = layout.link_table(t, settings)
    assert shaper.table_from_json(shaper.table_to_json(table)) == table


def test_netem_shapes_each_pair_on_the_device_into_its_destination_dc():
    table = {(1, 2): LinkShape(20, 2, 1, 0), (2, 1): LinkShape(20, 0, 0, 50)}
    cmds = [" ".join(c) for c in shaper.netem_commands("10.77", 2, table)]
    assert "tc qdisc replace dev dc2 parent 1:1 handle 10: netem limit 20000 delay 20ms 2ms loss 1%" in cmds
    assert (
        "tc filter replace dev dc2 parent 1: protocol ip prio 1 handle 800::1 u32 match ip src 10.77.1.0/24 flowid 1:1"
        in cmds
    )
    assert "tc class replace dev dc1 parent 1: classid 1:2 htb rate 50mbit" in cmds
    assert "tc qdisc replace dev dc1 parent 1:2 handle 20: netem limit 20000 delay 20ms" in cmds
    assert not any("dev dc1" in c and "src 10.77.1.0/24" in c for c in cmds)  # a DC's own traffic never crosses


def test_shaper_kinds_are_checked():
    import pytest

    with pytest.raises(ValueError, match="shaper must be one of auto, netem, forwarder"):
        shaper.for_kind("tc", ROOT, "10.77", 3)
