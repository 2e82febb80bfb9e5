"""Stack parsing, inventory and the roles' rendered config (rendered by Ansible itself)."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dcdrill.infra import ansible, inventory, stack
from dcdrill.infra.lab import layout
from dcdrill.infra.topology import ConfigError, from_config
from tests import ansible_localhost
from tests.process_configs import process_config

ROOT = Path(__file__).resolve().parents[2]


def test_stack_parsing_and_lab_defaults():
    assert set(stack.stack_names()) >= {"local", "local-3dc"}
    t = stack.load("local")
    assert (t.backend, t.profile, t.acks) == ("local", "consistency-first", "all")
    assert [(d.name, d.brokers, d.zookeepers) for d in t.datacenters] == [
        ("dc-a", 2, 1),
        ("dc-b", 2, 1),
        ("dc-c", 0, 1),
    ]
    assert stack.backend("local").settings.latency_ms == 5
    with pytest.raises(stack.UnknownStack, match="valid: .*local"):
        stack.load("nope")
    with pytest.raises(ConfigError, match=r"datacenters\[0\]\.brokers: Input should be a valid integer \(got 'two'\)"):
        from_config({"dcdrill:cluster": {"datacenters": [{"name": "a", "brokers": "two"}]}})


def test_lab_inventory_schema():
    t = stack.load("local")
    inv = layout.build_inventory(t, stack.backend("local").settings, Path("/tmp/cache"))
    kids = inv.data["all"]["children"]
    assert sorted(kids) == ["client", "kafka_broker", "kafka_controller", "zookeeper"]
    assert kids["kafka_controller"]["hosts"] == {} and inv.voters == inv.zookeepers
    b1 = kids["kafka_broker"]["hosts"]["b1.dc-a.lab"]
    assert (b1["dc"], b1["rack"], b1["broker_id"]) == ("dc-a", "dc-a", 1)
    assert (b1["ansible_host"], b1["ansible_ssh_extra_args"]) == ("dcd-b1", "-o HostName=10.77.1.11")
    assert kids["zookeeper"]["hosts"]["zk3.dc-c.lab"]["zookeeper_id"] == 3
    assert inv.vars["kafka_min_insync_replicas"] == 3
    assert [(h.name, h.dc, h.node_id) for h in inv.in_dc("dc-c")] == [("zk3.dc-c.lab", "dc-c", 3)]
    assert inv.bootstrap_servers() == ["b1.dc-a.lab:9092", "b2.dc-a.lab:9092", "b3.dc-b.lab:9092", "b4.dc-b.lab:9092"]
    addrs = [
        hv["ansible_ssh_extra_args"].removeprefix("-o HostName=") for g in kids.values() for hv in g["hosts"].values()
    ]
    assert len(addrs) == len(set(addrs)) and all(a.startswith("10.77.") for a in addrs)


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


def test_stack_files_are_valid_yaml_with_the_documented_shape():
    for name in stack.stack_names():
        cfg = yaml.safe_load((ROOT / f"Pulumi.{name}.yaml").read_text())["config"]
        assert cfg["dcdrill:backend"] in ("local", "aws")
        clusters = [cfg["dcdrill:cluster"]] if "dcdrill:cluster" in cfg else cfg["dcdrill:clusters"]
        assert all("datacenters" in c for c in clusters)


def test_the_stack_ca_signs_broker_key_stores_for_their_names(tmp_path):
    """infra/pki.py: a broker's PEM key store holds a PKCS#8 key and a chain the CA verifies, for
    its DNS name (and its address, where the inventory has one); a second run keeps every file."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import padding

    from dcdrill.infra import pki

    d = pki.ensure(tmp_path / "tls", "main", {"b1.dc-a.lab": "10.77.1.11", "b1.aws.internal": "i-0123456789abcdef0"})
    assert sorted(p.name for p in d.iterdir()) == ["b1.aws.internal.pem", "b1.dc-a.lab.pem", "ca.key", "ca.pem"]
    assert pki.names_in((d / "b1.dc-a.lab.pem").read_bytes()) == ("b1.dc-a.lab", "10.77.1.11")
    assert pki.names_in((d / "b1.aws.internal.pem").read_bytes()) == ("b1.aws.internal", None)  # an instance id
    store = (d / "b1.dc-a.lab.pem").read_text()
    assert store.startswith("-----BEGIN PRIVATE KEY-----") and store.count("BEGIN CERTIFICATE") == 2
    ca = x509.load_pem_x509_certificate((d / "ca.pem").read_bytes())
    leaf = x509.load_pem_x509_certificates(store.encode())[0]
    ca.public_key().verify(
        leaf.signature, leaf.tbs_certificate_bytes, padding.PKCS1v15(), leaf.signature_hash_algorithm
    )
    assert oct((d / "ca.key").stat().st_mode & 0o777) == "0o600"
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    pki.ensure(d, "main", {"b1.dc-a.lab": "10.77.1.11", "b1.aws.internal": "i-0123456789abcdef0"})
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before
    pki.ensure(d, "main", {"b1.dc-a.lab": "10.77.1.99"})  # the broker moved: a new certificate for it
    assert pki.names_in((d / "b1.dc-a.lab.pem").read_bytes()) == ("b1.dc-a.lab", "10.77.1.99")


def test_clients_get_the_stack_ca_only_on_tls_stacks():
    inv = inventory.Inventory({"all": {"vars": {"kafka_tls": True, "kafka_tls_dir": "/x/tls"}}})
    assert inv.client_security() == {
        "security_protocol": "SSL",
        "ssl_cafile": "/x/tls/ca.pem",
        "ssl_check_hostname": True,
    }
    assert inventory.Inventory({"all": {"vars": {"kafka_tls": False}}}).client_security() == {}
    with pytest.raises(ValueError, match="kafka_tls_dir"):
        inventory.Inventory({"all": {"vars": {"kafka_tls": True}}}).client_security()


def test_sasl_inventory_names_users_super_users_and_declared_acls():
    av = layout.build_inventory(stack.load("local"), stack.backend("local").settings, Path("/tmp/c")).vars
    assert (av["kafka_sasl"], av["kafka_sasl_admin"], av["kafka_sasl_client"], av["kafka_sasl_users"]) == (
        True,
        "admin",
        "workload",
        ["admin", "workload"],
    )
    assert av["kafka_super_users"][:2] == ["User:admin", "User:CN=b1.dc-a.lab,O=dcdrill"]
    assert {(a["principal"], a["resource"], a["name"], a["pattern"]) for a in av["kafka_access_acls"]} == {
        ("User:workload", "topic", "dcdrill", "prefixed"),
        ("User:workload", "group", "dcdrill", "prefixed"),
        ("User:workload", "transactional_id", "dcdrill", "prefixed"),
    }


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


def test_the_ansible_strategy_is_mitogens_unless_the_user_says_otherwise(monkeypatch):
    monkeypatch.delenv("DCDRILL_ANSIBLE_STRATEGY", raising=False)
    env = ansible.strategy_env()
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    assert (Path(env["ANSIBLE_STRATEGY_PLUGINS"]) / "mitogen_linear.py").is_file()
    monkeypatch.setenv("DCDRILL_ANSIBLE_STRATEGY", "linear")
    assert ansible.strategy_env() == {"ANSIBLE_STRATEGY": "linear"}


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
