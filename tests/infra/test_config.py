"""The roles' rendered config (rendered by Ansible itself), and what the roles' programs decide."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from dcdrill.infra import ansible, inventory, stack
from dcdrill.infra.lab import layout
from tests import ansible_localhost
from tests.process_configs import process_config

ROOT = Path(__file__).resolve().parents[2]


RENDER = """
- hosts: all
  gather_facts: false
  connection: local
  tasks:
    - ansible.builtin.template:
        src: "{root}/roles/kafka_broker/templates/server.properties.j2"
        dest: "{out}/{{{{ inventory_hostname }}}}.properties"
      when: "'kafka_broker' in group_names"
      vars: {{kafka_process_role: broker}}
    - ansible.builtin.template:
        src: "{root}/roles/kafka_broker/templates/server.properties.j2"
        dest: "{out}/{{{{ inventory_hostname }}}}.properties"
      when: "'kafka_controller' in group_names"
      vars: {{kafka_process_role: controller}}
    - ansible.builtin.template:
        src: "{root}/roles/zookeeper/templates/zoo.cfg.j2"
        dest: "{out}/{{{{ inventory_hostname }}}}.cfg"
      when: "'zookeeper' in group_names"
"""


def _render(tmp: Path, out: Path, tls: bool = True, name: str = "local", sasl: bool = True) -> str:
    """The roles' templates for a lab stack; tls=False: its PLAINTEXT twin (no TLS, no SASL);
    sasl=False: its TLS-only twin."""
    inv = layout.build_inventory(stack.load(name), stack.backend(name).settings, tmp, state=tmp).data
    # The roles' defaults under the inventory's own vars and below its host vars, where Ansible
    # ranks role defaults too (the inventory's data_root and kafka_tls must win).
    defaults = {}
    for role in ("kafka_broker", "zookeeper"):
        defaults |= yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())
    inv["all"]["vars"] = {
        **ansible.SHARED_INPUTS,
        **defaults,
        **inv["all"]["vars"],
        "kafka_tls": tls,
        "ansible_python_interpreter": sys.executable,
    }  # render on this machine
    if not tls:
        inv["all"]["vars"]["kafka_sasl"] = inv["all"]["vars"]["zookeeper_secure"] = False
    if not sasl:
        inv["all"]["vars"]["kafka_sasl"] = False
    (tmp / "inv.json").write_text(json.dumps(inv))
    (tmp / "render.yml").write_text(RENDER.format(root=ROOT, out=out))
    out.mkdir(exist_ok=True)
    # Under the strategy run_site uses (Mitogen's), so the roles' templates are checked through it.
    res = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp / "inv.json"), str(tmp / "render.yml")],
        capture_output=True,
        text=True,
        env={**os.environ, **ansible.strategy_env()},
    )
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
    # `local` has tls and sasl: SCRAM over TLS for clients, mutual TLS between brokers, ACLs on.
    assert kv["listener.security.protocol.map"] == "CLIENT:SASL_SSL,REPLICATION:SSL"
    assert kv["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert "ScramLoginModule required" in kv["listener.name.client.scram-sha-512.sasl.jaas.config"]
    assert kv["listener.name.replication.ssl.client.auth"] == "required"
    assert kv["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    assert kv["allow.everyone.if.no.acl.found"] == "false"
    assert kv["super.users"] == ";".join(
        ["User:admin"] + [f"User:CN=b{i}.dc-{d}.lab,O=dcdrill" for i, d in ((1, "a"), (2, "a"), (3, "b"), (4, "b"))]
    )
    tls = str(tmp_path / "lab" / "hosts" / "b3" / "kafka" / "tls")
    assert (kv["ssl.keystore.type"], kv["ssl.keystore.location"]) == ("PEM", f"{tls}/broker.pem")
    assert (kv["ssl.truststore.type"], kv["ssl.truststore.location"]) == ("PEM", f"{tls}/ca.pem")
    assert kv["ssl.endpoint.identification.algorithm"] == "https"
    # ZooKeeper locked down: TLS to it, checked names, ACLs on the znodes brokers create.
    assert (kv["zookeeper.ssl.client.enable"], kv["zookeeper.set.acl"]) == ("true", "true")
    assert kv["zookeeper.ssl.endpoint.identification.algorithm"] == "HTTPS"
    zoo = dict(
        line.split("=", 1)
        for line in (tmp_path / "one" / "zk1.dc-a.lab.cfg").read_text().splitlines()
        if "=" in line and not line.startswith("#")
    )
    assert "clientPort" not in zoo and zoo["secureClientPort"] == "2181" and zoo["sslQuorum"] == "true"
    assert (zoo["enforce.auth.enabled"], zoo["enforce.auth.schemes"], zoo["quorum.auth.serverRequireSasl"]) == (
        "true",
        "sasl",
        "true",
    )
    _render(tmp_path, tmp_path / "plain", tls=False)
    plain = (tmp_path / "plain" / "b3.dc-b.lab.properties").read_text()
    assert "listener.security.protocol.map=CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT" in plain and "ssl." not in plain
    # TLS alone: REPLICATION still asks for a broker's certificate, CLIENT for none.
    _render(tmp_path, tmp_path / "tls", sasl=False)
    tls_only = (tmp_path / "tls" / "b3.dc-b.lab.properties").read_text().splitlines()
    assert "listener.security.protocol.map=CLIENT:SSL,REPLICATION:SSL" in tls_only
    assert "listener.name.replication.ssl.client.auth=required" in tls_only and "ssl.client.auth=none" in tls_only
    assert kv["min.insync.replicas"] == "3" and kv["unclean.leader.election.enable"] == "false"
    assert kv["offsets.topic.replication.factor"] == "4" and kv["transaction.state.log.min.isr"] == "3"
    assert kv["zookeeper.connect"] == "zk1.dc-a.lab:2181,zk2.dc-b.lab:2181,zk3.dc-c.lab:2181"
    assert kv["replica.selector.class"].endswith("RackAwareReplicaSelector")
    zoo = (tmp_path / "one" / "zk1.dc-a.lab.cfg").read_text()
    assert "server.3=zk3.dc-c.lab:2888:3888" in zoo and "4lw.commands.whitelist=mntr,ruok,srvr,stat" in zoo


def test_kraft_config_has_a_dynamic_quorum_and_no_zookeeper(tmp_path):
    _render(tmp_path, tmp_path / "k", name="local-kraft")

    def props(host):
        lines = (tmp_path / "k" / f"{host}.properties").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))

    broker, ctl = props("b3.dc-b.lab"), props("ctl3.dc-c.lab")
    assert not [k for k in {**broker, **ctl} if k.startswith("zookeeper.") or k == "broker.id"]
    quorum = "ctl1.dc-a.lab:9094,ctl2.dc-b.lab:9094,ctl3.dc-c.lab:9094"
    assert (broker["node.id"], broker["process.roles"], broker["broker.rack"]) == ("3", "broker", "dc-b")
    assert (ctl["node.id"], ctl["process.roles"], ctl["listeners"]) == (
        "1003",
        "controller",
        "CONTROLLER://0.0.0.0:9094",
    )
    for kv in (broker, ctl):
        assert kv["controller.quorum.bootstrap.servers"] == quorum and "controller.quorum.voters" not in kv
        assert kv["controller.listener.names"] == "CONTROLLER"
        assert kv["listener.name.controller.ssl.client.auth"] == "required"  # mutual TLS to the quorum
        assert kv["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        assert "User:CN=ctl1.dc-a.lab,O=dcdrill" in kv["super.users"].split(";")
        # The controller elects leaders and creates topics: it must know the stack's replication.
        assert (kv["unclean.leader.election.enable"], kv["min.insync.replicas"]) == ("false", "3")
    assert broker["listener.security.protocol.map"] == "CLIENT:SASL_SSL,CONTROLLER:SSL,REPLICATION:SSL"
    assert ctl["advertised.listeners"] == "CONTROLLER://ctl3.dc-c.lab:9094" and "broker.rack" not in ctl


def test_passwords_reach_each_child_process_on_its_stdin(tmp_path, monkeypatch):
    """A child process's settings travel on its command line: there the password is a file name."""
    from dcdrill.infra import passwords
    from dcdrill.validation import clients

    first = {"admin": "a-Secret1", "workload": "w-Secret2"}
    path = passwords.write(tmp_path / "credentials.json", first)
    assert json.loads(path.read_text()) == first and oct(path.stat().st_mode & 0o777) == "0o600"
    inv = inventory.Inventory(
        {
            "all": {
                "vars": {
                    "kafka_tls": True,
                    "kafka_tls_dir": "/x",
                    "kafka_sasl": True,
                    "kafka_sasl_admin": "admin",
                    "kafka_sasl_client": "workload",
                    "kafka_sasl_credentials": str(path),
                }
            }
        }
    )
    assert inv.client_security(admin=True)["sasl_plain_password"] == first["admin"]
    child = inv.process_security()
    assert child["sasl_plain_password"] is None and first["workload"] not in json.dumps(child)
    assert str(path) not in json.dumps(child)  # no file of every user's passwords either
    # the workload hands each process its own user's password on stdin (validation/workload.py)
    monkeypatch.setattr("sys.stdin", io.StringIO(first["workload"] + "\n"))
    resolved = clients.resolve_security(clients.become_agent(process_config(security=child)))
    assert resolved == {
        "security_protocol": "SASL_SSL",
        "ssl_cafile": "/x/ca.pem",
        "ssl_check_hostname": True,
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "workload",
        "sasl_plain_password": first["workload"],
    }
    rd = clients.librdkafka_security(resolved)
    assert (rd["security.protocol"], rd["sasl.mechanisms"], rd["sasl.username"]) == (
        "sasl_ssl",
        "SCRAM-SHA-512",
        "workload",
    )
    assert f'password="{first["workload"]}";' in clients.java_properties(resolved)[-1]


def test_acl_reconcile_adds_the_missing_and_removes_the_undeclared():
    """roles/kafka_access/library/kafka_acls.py: the decision, without a cluster."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "kafka_access_acls", ROOT / "roles/kafka_access/library/kafka_acls.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    wanted = mod.desired(
        [
            {
                "principal": "User:w",
                "resource": "topic",
                "name": "d",
                "pattern": "prefixed",
                "operations": ["read", "write"],
            }
        ]
    )
    existing = {("User:w", "topic", "d", "prefixed", "read"), ("User:old", "group", "g", "literal", "read")}
    assert mod.diff(existing, wanted) == (
        [("User:w", "topic", "d", "prefixed", "write")],
        [("User:old", "group", "g", "literal", "read")],
    )
    assert mod.diff(wanted, wanted) == ([], [])


def test_topics_created_are_the_declared_ones_the_cluster_lacks_with_the_stacks_replication():
    """roles/kafka_topics/library/kafka_topics.py: the decision, without a cluster (the lab's
    bring-up runs it against real brokers)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "kafka_topics_module", ROOT / "roles/kafka_topics/library/kafka_topics.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    declared = [
        {"name": "dcdrill", "partitions": 6},
        {"name": "dcdrill-canary", "partitions": 1},
        {"name": "own", "partitions": "3", "replication_factor": 2, "min_insync": 1},
    ]
    assert mod.missing(declared, {"dcdrill"}, 4, 3) == [
        {"name": "dcdrill-canary", "partitions": 1, "replication_factor": 4, "min_insync": 3},
        {"name": "own", "partitions": 3, "replication_factor": 2, "min_insync": 1},
    ]
    assert mod.missing(declared, {"dcdrill", "dcdrill-canary", "own", "other"}, 4, 3) == []


def test_a_systemd_unit_waits_for_the_data_volume_its_service_works_on(tmp_path):
    """EC2 hosts mount the data volume `nofail` (infra/aws/hosts.py): after a stop or a power loss
    a unit must wait for it (RequiresMountsFor), not start on the bare root disk (issue 69, item 9)."""
    service_vars = {
        "java_binary": "/usr/bin/java",
        "jvm_service_heap_mb": 512,
        "jvm_service_opts": [],
        "jvm_service_extra_opts": [],
        "jvm_service_log4j_option": "-Dlog4j.configuration=file:",
        "jvm_service_log4j": "/var/lib/dcdrill/kafka/log4j.properties",
        "kafka_libs_dir": "/opt/kafka/libs",
        "jvm_service_main": "kafka.Kafka",
        "jvm_service_args": ["/var/lib/dcdrill/kafka/server.properties"],
        "jvm_service_dir": "/var/lib/dcdrill/kafka",
        "jvm_service_user": "kafka",
        "jvm_service_name": "kafka",
    }
    (tmp_path / "vars.json").write_text(json.dumps(service_vars))
    res = ansible_localhost(
        "ansible.builtin.template",
        f"src={ROOT}/roles/jvm_service/templates/unit.service.j2 dest={tmp_path}/kafka.service",
        f"@{tmp_path / 'vars.json'}",
    )
    assert res.returncode == 0, res.stdout + res.stderr
    unit = (tmp_path / "kafka.service").read_text().splitlines()
    assert "RequiresMountsFor=/var/lib/dcdrill/kafka" in unit and "WorkingDirectory=/var/lib/dcdrill/kafka" in unit
    assert "After=network-online.target" in unit and "Wants=network-online.target" in unit
