"""The real lab: Kafka and ZooKeeper JVMs in network namespaces."""

import copy
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dcdrill.infra import pulumi_cli
from dcdrill.infra.constants import cache_dir, project_dir, state_dir
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import host_keys, hostaccess, status
from tests.conftest import MARKER_SECRET
from tests.lab_access import cluster_ports_from_the_control, dial, in_client, lab_address

pytestmark = pytest.mark.lab


def test_lab_is_healthy_and_rack_aware(lab):
    st = status.cluster_status(lab)
    assert [(b["id"], b["dc"], b["alive"]) for b in st["brokers"]] == [
        (1, "dc-a", True),
        (2, "dc-a", True),
        (3, "dc-b", True),
        (4, "dc-b", True),
    ]
    assert st["quorum"] | {"nodes": None, "leader": None} == {
        "kind": "zookeeper",
        "alive": 3,
        "total": 3,
        "quorum": True,
        "nodes": None,
        "leader": None,
    }
    assert st["offline_partitions"] == 0 and st["under_replicated_partitions"] == 0


def test_every_kafka_and_zookeeper_jvm_maps_the_class_data_archive_setup_trained(lab):
    """The archive (infra/java_archive.py) matches only the JDK and jars it was dumped with, and a
    JVM that finds it stale loads its classes itself without a word: a mapped file is the proof."""
    archive = lab.vars["java_class_archive"]
    assert archive and Path(archive).is_file(), archive
    pids = [
        int(p)
        for p in subprocess.run(
            ["pgrep", "-f", "kafka[.]Kafka|QuorumPeerMain"], capture_output=True, text=True
        ).stdout.split()
    ]
    assert len(pids) == 7, pids  # 4 brokers, 3 ZooKeeper nodes
    unmapped = [pid for pid in pids if archive not in Path(f"/proc/{pid}/maps").read_text()]
    assert not unmapped, unmapped


def test_factor_4_topic_puts_two_replicas_in_each_broker_dc(lab):
    hostaccess.call(
        lab,
        "create_topic",
        {"topic": "it-rack", "partitions": 12, "factor": 4, "configs": {"min.insync.replicas": "3"}},
    )
    time.sleep(2)
    parts = [p for p in status.cluster_status(lab)["partitions"] if p["topic"] == "it-rack"]
    assert len(parts) == 12
    for p in parts:
        assert sorted(p["replica_dcs"]) == ["dc-a", "dc-a", "dc-b", "dc-b"], p


def test_listeners_speak_tls_with_the_stack_ca(lab):
    """`local` has tls: true. Both listeners answer TLS with a certificate the stack's CA signed
    for the broker's own name; a client expecting another name, or speaking PLAINTEXT, gets nowhere."""
    # From another broker's host: the REPLICATION listener admits brokers only (the lab firewall).
    code = """
import socket, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
for port in (9092, 9093):  # CLIENT, REPLICATION
    with socket.create_connection(("b1.dc-a.lab", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname="b1.dc-a.lab") as tls:
            print(port, dict(tls.getpeercert()["subjectAltName"]).get("DNS"))
with socket.create_connection(("b1.dc-a.lab", 9092), timeout=10) as raw:
    try:
        ctx.wrap_socket(raw, server_hostname="b2.dc-a.lab")
    except ssl.SSLCertVerificationError as exc:
        print("other name:", "match" in str(exc))
"""
    res = subprocess.run(
        ["ip", "netns", "exec", lab.brokers[2].netns, sys.executable, "-c", code, lab.client_security()["ssl_cafile"]],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.stdout.split("\n")[:3] == ["9092 b1.dc-a.lab", "9093 b1.dc-a.lab", "other name: True"], res.stderr
    plaintext = in_client(
        lab,
        "dc-a",
        "import sys\nfrom kafka.admin import KafkaAdminClient\n"
        "from kafka.errors import KafkaTimeoutError\ntry:\n"
        "    KafkaAdminClient(bootstrap_servers=sys.argv[1:], bootstrap_timeout_ms=5000, request_timeout_ms=5000)\n"
        "except KafkaTimeoutError:\n    print('no answer')",
        *lab.bootstrap_servers(),
    )
    assert plaintext.stdout.strip() == "no answer", plaintext.stderr


def test_produce_in_one_dc_consume_in_the_other(lab):
    """A client namespace in dc-a produces, one in dc-b consumes (client.rack = its DC)."""
    code = """
import json, sys
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
boot, security = json.loads(sys.argv[2]), json.loads(sys.argv[3])
if sys.argv[1] == "produce":
    p = KafkaProducer(bootstrap_servers=boot, acks="all", **security)
    offs = [p.send("it-rack", f"m{i}".encode(), partition=i % 12).get(timeout=30).offset for i in range(120)]
    p.close(); print(len(offs))
else:
    c = KafkaConsumer(bootstrap_servers=boot, client_rack="dc-b", enable_auto_commit=False, consumer_timeout_ms=15000,
                      **security)
    tps = [TopicPartition("it-rack", i) for i in range(12)]
    c.assign(tps); c.seek_to_beginning(*tps)
    print(sum(1 for _ in c))
"""
    # As the admin user: it-rack is outside the workload user's ACLs (dcdrill-*).
    boot, security = json.dumps(lab.bootstrap_servers()), json.dumps(lab.client_security(admin=True))
    prod = in_client(lab, "dc-a", code, "produce", boot, security)
    assert prod.stdout.strip() == "120", prod.stderr
    cons = in_client(lab, "dc-b", code, "consume", boot, security)
    assert cons.stdout.strip() == "120", cons.stderr


def test_status_json_cli(lab):
    out = subprocess.run(
        [sys.executable, "-m", "dcdrill.cli", "status", "--stack", "local", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    st = json.loads(out.stdout)
    assert out.returncode == 0
    assert set(st) >= {"brokers", "quorum", "partitions", "offline_partitions", "under_replicated_partitions"}
    assert set(st["partitions"][0]) >= {"topic", "partition", "leader", "replicas", "isr"}


def test_refresh_notices_a_vanished_host(lab):
    before = pulumi_cli.resource_count("local")
    subprocess.run(["ip", "netns", "exec", "dcd-c2", "true"], check=True)
    # c2 is a client host (no JVM): removing its namespace behind Pulumi's back, then refresh.
    from dcdrill.infra.lab import netns

    netns.delete_host("c2")
    pulumi_cli.refresh("local")
    assert pulumi_cli.resource_count("local") == before - 1
    pulumi_cli.up("local")  # and `pulumi up` puts it back
    assert pulumi_cli.resource_count("local") == before and netns.ns_exists("dcd-c2")


def test_pulumi_up_refuses_a_rule_breaking_stack_before_any_resource():
    """The program checks the topology rules before registering anything: nothing to destroy."""
    import yaml

    name = "it-broken"
    path = project_dir() / f"Pulumi.{name}.yaml"
    cfg = yaml.safe_load((project_dir() / "Pulumi.local.yaml").read_text())
    cfg["config"]["dcdrill:cluster"]["replication"]["factor"] = 5  # 5 replicas, 4 brokers
    cfg.pop("encryptionsalt", None)
    path.write_text(yaml.safe_dump(cfg))
    try:
        with pytest.raises(pulumi_cli.PulumiError) as err:
            pulumi_cli.up(name)
        said = str(err.value)
        assert "factor-exceeds-brokers" in said and "replication factor 5 > 4 brokers" in said, said[-2000:]
        assert pulumi_cli.resource_count(name) <= 1  # at most the Stack itself, no lab resource
    finally:
        subprocess.run(
            [str(cache_dir() / "bin" / "pulumi"), "stack", "rm", name, "--yes", "--force", "--non-interactive"],
            cwd=project_dir(),
            env=pulumi_cli.env(name),
            capture_output=True,
        )
        path.unlink(missing_ok=True)


def _ssh(lab, host, user: str, command: str) -> subprocess.CompletedProcess:
    """Log in to a lab host as Ansible does: the inventory's key, id and HostName option."""
    argv = [
        "ssh",
        "-i",
        lab.vars["ansible_ssh_private_key_file"],
        *lab.vars["ansible_ssh_common_args"].split(),
        *host.vars["ansible_ssh_extra_args"].split(),
        "-o",
        "BatchMode=yes",
        "-o",
        "ConnectTimeout=5",
        f"{user}@{host.address}",
        command,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def test_hosts_admit_only_the_unprivileged_login_which_becomes_root(lab):
    # What SSM gives on AWS: ssm-user, root only through sudo. The lab takes no root login.
    host = lab.brokers[0]
    login = lab.vars["ansible_user"]
    own = _ssh(lab, host, login, "id -u; sudo -n id -u")
    assert own.returncode == 0, own.stderr
    uid, became = own.stdout.split()
    assert int(uid) != 0 and became == "0"
    assert _ssh(lab, host, "root", "true").returncode == 255  # refused
    # The id is the connection's alone: the control cannot dial it as a name.
    assert subprocess.run(["getent", "hosts", host.address], capture_output=True).returncode != 0


def test_host_keys_are_pinned_learned_at_first_contact_and_a_changed_one_refused(lab, tmp_path):
    # The lab pinned each host's key as its sshd started: nothing left to learn.
    assert host_keys.learn(lab) == []
    # AWS's first contact (accept-new), taken here into an empty known_hosts
    fresh = Inventory(copy.deepcopy(lab.data))
    pinned = str(host_keys.known_hosts(lab))
    fresh.vars["ansible_ssh_common_args"] = lab.vars["ansible_ssh_common_args"].replace(pinned, str(tmp_path / "kh"))
    assert sorted(host_keys.learn(fresh)) == sorted(h.name for h in lab.hosts())
    assert host_keys.learn(fresh) == []  # and once known, not contacted again
    host = lab.brokers[0]
    ip = host.vars["ansible_ssh_extra_args"].split("HostName=")[1].split()[0]
    assert host_keys.known(tmp_path / "kh", ip)
    # a host showing another key than the one known is refused
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    (tmp_path / "kh").write_text(f"{ip} {' '.join((tmp_path / 'other.pub').read_text().split()[:2])}\n")
    refused = _ssh(fresh, host, lab.vars["ansible_user"], "true")
    assert refused.returncode != 0 and "Host key verification failed" in refused.stderr, refused.stderr


def test_agents_run_on_each_client_hosts_own_python(lab):
    """roles/dcdrill_agent: every client host has its own virtualenv, with dcdrill's modules and the
    packages they import installed there from what the control sent, as on an EC2 host; nothing
    an agent runs comes from the control's Python."""
    for host in lab.clients:
        where = hostaccess.run(
            lab,
            host,
            [
                f"{host.vars['dcdrill_agent_dir']}/venv/bin/python",
                "-c",
                "import json, sys, dcdrill.infra.observe.agent, confluent_kafka, kafka, pydantic; "
                "print(json.dumps([sys.prefix, dcdrill.__file__, confluent_kafka.__file__, kafka.__file__, "
                "pydantic.__file__]))",
            ],
        )
        paths = json.loads(where)
        assert all(p.startswith(host.vars["dcdrill_agent_dir"] + "/") for p in paths), (host.name, paths)
        assert not any(p.startswith(sys.prefix + "/") for p in paths), paths  # the control's virtualenv


def _master_pid(sock: Path) -> int | None:
    said = subprocess.run(["ssh", "-o", f"ControlPath={sock}", "-O", "check", "master"], capture_output=True, text=True)
    found = re.search(r"pid=(\d+)", said.stderr)
    return int(found.group(1)) if said.returncode == 0 and found else None


def _sessions_to(host) -> int:
    """Established ssh connections to `host` (its sshd's port 22), seen in its own namespace."""
    out = subprocess.run(
        ["ip", "netns", "exec", host.netns, "ss", "-Htn", "state", "established", "( sport = :22 )"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return len(out.splitlines())


def test_host_access_keeps_one_connection_a_host_and_opens_it_again_once_gone(lab):
    """Calls share the host's master connection (ControlMaster: on AWS each new one is an SSM
    session): one TCP connection for many calls; a master killed is replaced at the next call; a
    master runs no command; `close_masters` ends them all (lab down and up call it)."""
    host = lab.clients[0]
    hostaccess.close_masters(lab)
    time.sleep(1)  # the connections just ended leave the host's table
    before = _sessions_to(host)
    assert hostaccess.run(lab, host, ["echo", "here"]) == "here\n"
    [sock] = [p for p in hostaccess.masters_dir(lab).iterdir() if not p.suffix]
    pid = _master_pid(sock)
    for _ in range(3):
        assert hostaccess.run(lab, host, ["echo", "here"]) == "here\n"
    assert pid is not None and _master_pid(sock) == pid and _sessions_to(host) == before + 1
    # what runs for the whole drill keeps a connection of its own
    assert not any("ControlPath=" in a for a in hostaccess.ssh_command(lab, host, ["true"], shared=False))
    assert "-N" in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")  # no command of its own
    assert MARKER_SECRET.encode() not in Path(f"/proc/{pid}/environ").read_bytes()  # nor the CI job's tokens
    subprocess.run(["kill", "-9", str(pid)], check=True)
    time.sleep(0.5)
    assert hostaccess.run(lab, host, ["echo", "again"]) == "again\n"  # its stale socket replaced
    again = _master_pid(sock)
    assert again is not None and again != pid
    assert hostaccess.close_masters(lab) == 1
    assert _master_pid(sock) is None and not any(hostaccess.masters_dir(lab).iterdir())
    # a first contact (host_keys.learn's options first) never rides a master: it must see the key
    argv = hostaccess.ssh_command(lab, host, ["true"], ["-o", "StrictHostKeyChecking=accept-new"])
    assert not any(a.startswith("ControlPath=") for a in argv)
    # the host's sshd takes as many sessions on that connection as an AWS host's (SSHD_LIMITS)
    sshd = subprocess.run(
        ["pgrep", "-a", "-f", f"ListenAddress={lab_address(host.name)}"], capture_output=True, text=True
    )
    assert "MaxSessions=100" in sshd.stdout and "MaxStartups=100" in sshd.stdout, sshd.stdout


def test_every_host_admits_its_flow_table_and_drops_the_rest(lab):
    # The lab enforces the table AWS's security groups are rendered from (infra/flows.py): a flow
    # the code uses but the table lacks is dropped here as it would be there.
    from dcdrill.infra import stack
    from dcdrill.infra.lab import firewall, layout

    d, prefix = stack.load_deployment("local"), stack.backend("local").settings.subnet_prefix
    for short, rules in firewall.render(d, layout.addresses(d, prefix), prefix).items():
        assert firewall.installed(short) == firewall.expected(rules), short
    c1, b1, zk1 = lab.clients[0], lab.brokers[0], lab.zookeepers[0]
    admitted = [
        (c1, b1.name, 9092),
        (b1, zk1.name, 2181),
        (b1, lab.brokers[2].name, 9093),
        (None, lab_address(b1.name), 22),
    ]
    dropped = [(c1, b1.name, 9093), (c1, zk1.name, 3888), (b1, c1.name, 22), (lab.brokers[2], zk1.name, 3888)]

    def dial_all(triples):
        return {
            (src.name if src else "control", host, port): dial(src.netns if src else None, host, port)
            for src, host, port in triples
        }

    got = dial_all(admitted)
    assert set(got.values()) <= {"open", "refused"}, got
    got = dial_all(dropped)
    assert set(got.values()) == {"dropped"}, got


def test_no_cluster_port_answers_from_the_control(lab):
    # What the control asks of the cluster runs on client hosts (infra/observe/agent.py): it dials nothing.
    got = cluster_ports_from_the_control("local")
    assert len(got) >= 10 and set(got.values()) == {"dropped"}, got
    # Nor does it resolve their names, as a CI runner resolves none of a VPC's private zone; the
    # hosts do (each namespace's /etc/hosts is the lab's file).
    for h in lab.hosts():
        assert subprocess.run(["getent", "hosts", h.name], capture_output=True).returncode == 2, h.name
    assert dial(lab.clients[0].netns, lab.brokers[0].name, 9092) == "open"


def test_a_drill_stops_before_any_fault_when_a_host_does_not_answer(lab, tmp_path):
    # c2's sshd gone: host access to c2 fails as an SSM agent that went away would.
    import os
    import signal

    from dcdrill.infra.lab import layout, sshd

    c2 = next(h for h in lab.clients if h.name.startswith("c2."))
    lab_dir = layout.lab_dir(state_dir())
    pidfile = lab_dir / "hosts" / "c2" / "sshd.pid"
    os.kill(int(pidfile.read_text()), signal.SIGTERM)
    try:
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "dcdrill.cli",
                "drill",
                "--stack",
                "local",
                "--experiment",
                "kill-dc",
                "--run-dir",
                str(tmp_path / "run"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        time.sleep(0.5)
        pidfile.unlink(missing_ok=True)
        sshd.start("c2", c2.vars["ansible_ssh_extra_args"].removeprefix("-o HostName="), lab_dir)
    assert res.returncode == 3, res.stdout + res.stderr
    assert "host access: c2.dc-b.lab" in res.stderr and "nothing was injected" in res.stderr
    assert not (tmp_path / "run" / "faults.jsonl").exists()
