"""Stack parsing, inventory and the roles' rendered config (rendered by Ansible itself)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infra import inventory, stack
from infra.lab import layout
from infra.topology import ConfigError, from_config

ROOT = Path(__file__).resolve().parent.parent


def test_stack_parsing_and_lab_defaults():
    assert set(stack.stack_names()) >= {"local", "local-3dc"}
    t = stack.load("local")
    assert (t.backend, t.profile, t.acks) == ("local", "consistency-first", "all")
    assert [(d.name, d.brokers, d.zookeepers) for d in t.datacenters] == [("dc-a", 2, 1), ("dc-b", 2, 1), ("dc-c", 0, 1)]
    assert stack.lab_settings(stack.load_config("local"))["latency_ms"] == 5
    with pytest.raises(stack.UnknownStack, match="valid: .*local"):
        stack.load("nope")
    with pytest.raises(ConfigError, match="whole number"):
        from_config({"dcdrill:cluster": {"datacenters": [{"name": "a", "brokers": "two"}]}})


def test_lab_inventory_schema():
    t = stack.load("local")
    inv = layout.build_inventory(t, stack.lab_settings(stack.load_config("local")), Path("/tmp/cache"))
    kids = inv["all"]["children"]
    assert sorted(kids) == ["client", "kafka_broker", "zookeeper"]
    b1 = kids["kafka_broker"]["hosts"]["b1.dc-a.lab"]
    assert (b1["dc"], b1["rack"], b1["broker_id"], b1["ansible_host"]) == ("dc-a", "dc-a", 1, "10.77.1.11")
    assert kids["zookeeper"]["hosts"]["zk3.dc-c.lab"]["zookeeper_id"] == 3
    assert inv["all"]["vars"]["kafka_min_insync_replicas"] == 3
    assert inventory.bootstrap_servers(inv) == ["b1.dc-a.lab:9092", "b2.dc-a.lab:9092", "b3.dc-b.lab:9092", "b4.dc-b.lab:9092"]
    addrs = [hv["ansible_host"] for g in kids.values() for hv in g["hosts"].values()]
    assert len(addrs) == len(set(addrs)) and all(a.startswith("10.77.") for a in addrs)


RENDER = """
- hosts: all
  gather_facts: false
  connection: local
  vars_files: [{root}/roles/kafka_broker/defaults/main.yml, {root}/roles/zookeeper/defaults/main.yml]
  tasks:
    - ansible.builtin.template: {{src: "{root}/roles/kafka_broker/templates/server.properties.j2", dest: "{out}/{{{{ inventory_hostname }}}}.properties"}}
      when: "'kafka_broker' in group_names"
    - ansible.builtin.template: {{src: "{root}/roles/zookeeper/templates/zoo.cfg.j2", dest: "{out}/{{{{ inventory_hostname }}}}.cfg"}}
      when: "'zookeeper' in group_names"
"""


def _render(tmp: Path, out: Path) -> str:
    inv = layout.build_inventory(stack.load("local"), stack.lab_settings(stack.load_config("local")), tmp)
    inv["all"]["vars"]["ansible_python_interpreter"] = sys.executable  # render on this machine
    (tmp / "inv.json").write_text(json.dumps(inv))
    (tmp / "render.yml").write_text(RENDER.format(root=ROOT, out=out))
    out.mkdir(exist_ok=True)
    res = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp / "inv.json"),
                          str(tmp / "render.yml")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_rendered_config_is_sorted_deterministic_and_rack_aware(tmp_path):
    _render(tmp_path, tmp_path / "one")
    second = _render(tmp_path, tmp_path / "one")
    assert "changed=0" in second and "changed=1" not in second  # idempotent: same bytes again
    props = (tmp_path / "one" / "b3.dc-b.lab.properties").read_text().splitlines()
    keys = [line.split("=", 1)[0] for line in props if line and not line.startswith("#")]
    assert keys == sorted(keys)
    kv = dict(line.split("=", 1) for line in props if "=" in line and not line.startswith("#"))
    assert kv["broker.id"] == "3" and kv["broker.rack"] == "dc-b"
    assert kv["advertised.listeners"] == "CLIENT://b3.dc-b.lab:9092,REPLICATION://b3.dc-b.lab:9093"
    assert kv["inter.broker.listener.name"] == "REPLICATION"
    assert kv["listener.security.protocol.map"] == "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT"
    assert kv["min.insync.replicas"] == "3" and kv["unclean.leader.election.enable"] == "false"
    assert kv["offsets.topic.replication.factor"] == "4" and kv["transaction.state.log.min.isr"] == "3"
    assert kv["zookeeper.connect"] == "zk1.dc-a.lab:2181,zk2.dc-b.lab:2181,zk3.dc-c.lab:2181"
    assert kv["replica.selector.class"].endswith("RackAwareReplicaSelector")
    zoo = (tmp_path / "one" / "zk1.dc-a.lab.cfg").read_text()
    assert "server.3=zk3.dc-c.lab:2888:3888" in zoo and "4lw.commands.whitelist=mntr,ruok,srvr,stat" in zoo


def test_stack_files_are_valid_yaml_with_the_documented_shape():
    for name in stack.stack_names():
        cfg = yaml.safe_load((ROOT / f"Pulumi.{name}.yaml").read_text())["config"]
        assert cfg["dcdrill:backend"] in ("local", "aws")
        assert "datacenters" in cfg["dcdrill:cluster"]
