"""The lab's security: ZooKeeper locked down (TLS only on its client port, SASL required, znode
ACLs), no password on any command line while the lab comes up and a workload runs, and no
service running as root."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dcdrill.infra.ports import ZOOKEEPER_CLIENT_PORT
from tests.conftest import CommandLines

pytestmark = pytest.mark.lab


def zk_cli(lab, *command, tls=True, login=False, timeout=40):
    """Kafka's own ZooKeeper shell (ZooKeeperMain) from a client host (the control may not dial
    ZooKeeper: the lab firewall drops it), against zk1."""
    av = lab.vars
    opts = []
    if tls:
        opts += [
            "-Dzookeeper.client.secure=true",
            "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
            f"-Dzookeeper.ssl.trustStore.location={av['kafka_tls_dir']}/ca.pem",
            "-Dzookeeper.ssl.trustStore.type=PEM",
        ]
    if login:  # the brokers' own login (roles/kafka_broker: jaas.conf)
        b1 = lab.brokers[0].vars["data_root"]
        opts.append(f"-Djava.security.auth.login.config={b1}/kafka/jaas.conf")
    zk = f"{lab.zookeepers[0].name}:{ZOOKEEPER_CLIENT_PORT}"
    res = subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            lab.clients[0].netns,
            "java",
            *opts,
            "-cp",
            f"{av['kafka_libs_dir']}/*",
            "org.apache.zookeeper.ZooKeeperMain",
            "-server",
            zk,
            *command,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return res.stdout + res.stderr


def test_zookeeper_refuses_clients_without_credentials(lab):
    assert lab.vars["zookeeper_secure"] is True
    for path in ("/config/users", "/kafka-acl"):
        # TLS but no SASL login: the session is closed before any read or write.
        out = zk_cli(lab, "ls", path)
        assert "client failed to authenticate" in out, out
        out = zk_cli(lab, "create", f"{path}/intruder", "x")
        assert "client failed to authenticate" in out and "Created" not in out, out
        # No TLS at all: the port speaks TLS only.
        out = zk_cli(lab, "ls", path, tls=False, timeout=20)
        assert "ConnectionLoss" in out and "workload" not in out, out
    # The brokers' login reads them (the test can fail), and the znodes carry ACLs for it alone.
    out = zk_cli(lab, "ls", "/config/users", login=True)
    assert "workload" in out and "admin" in out, out
    acl = zk_cli(lab, "getAcl", "/config/users/workload", login=True)
    assert "'sasl,'kafka" in acl and "'world,'anyone" not in acl, acl


def passwords(lab) -> list[str]:
    out = list(json.loads(Path(lab.vars["kafka_sasl_credentials"]).read_text()).values())
    return out + list(json.loads(Path(lab.vars["zookeeper_credentials"]).read_text()).values())


def test_no_password_on_any_command_line(lab, lab_up_command_lines, tmp_path):
    secrets = passwords(lab)
    assert len(secrets) >= 4 and all(len(s) >= 16 for s in secrets)
    seen = set(lab_up_command_lines["lab up"])
    assert any("kafka.Kafka" in line for line in seen) and any("ConfigCommand" in line for line in seen)
    sampler = CommandLines()  # and during a workload with its producers, consumers and audit
    try:
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "dcdrill.cli",
                "workload",
                "run",
                "--duration",
                "8",
                "--topic",
                "dcdrill-it-ps",
                "--run-dir",
                str(tmp_path / "run"),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert res.returncode == 0, res.stderr
    finally:
        seen |= sampler.stop()
    assert any("dcdrill.validation.producer" in line for line in seen)
    leaked = [line for line in seen for s in secrets if s in line]
    assert not leaked, leaked


def test_every_service_runs_as_a_uid_of_its_own_that_cannot_read_another_services_key(lab):
    """As on AWS, where each is a machine of its own: no broker or ZooKeeper node runs as root or
    shares a uid, and one broker's uid cannot read another broker's private key."""
    ps = subprocess.run(["ps", "-eww", "-o", "uid=,args="], capture_output=True, text=True).stdout.splitlines()
    running = {}  # host folder -> uid
    for line in ps:
        uid, args = line.split(None, 1)
        if "java" in args and ("kafka.Kafka" in args or "QuorumPeerMain" in args):
            host = next(h for h in lab.hosts("kafka_broker", "zookeeper") if h.vars["data_root"] + "/" in args)
            running[host.name] = int(uid)
    wanted = {
        h.name: int(h.vars.get("kafka_broker_service_user") or h.vars["zookeeper_service_user"])
        for h in lab.hosts("kafka_broker", "zookeeper")
    }
    assert running == wanted and 0 not in running.values()
    assert len(set(running.values())) == len(running)
    b1, b2 = lab.brokers[:2]
    key = f"{b2.vars['data_root']}/kafka/tls/broker.pem"
    as_b1 = subprocess.run(
        ["setpriv", f"--reuid={running[b1.name]}", f"--regid={running[b1.name]}", "--clear-groups", "cat", key],
        capture_output=True,
        text=True,
    )
    assert as_b1.returncode != 0 and "Permission denied" in as_b1.stderr
    as_b2 = subprocess.run(
        [
            "setpriv",
            f"--reuid={running[b2.name]}",
            f"--regid={running[b2.name]}",
            "--clear-groups",
            "head",
            "-c",
            "10",
            key,
        ],
        capture_output=True,
        text=True,
    )
    assert as_b2.returncode == 0 and as_b2.stdout.startswith("-----")


def test_the_scram_program_is_roots_alone_and_its_users_file_gone_once_it_ran(lab):
    """The SCRAM users' program (roles/kafka_broker/files/ScramUsers.java) runs as root from root's
    own folder on one broker host: that broker's uid cannot put another program in its place, and
    the file of the users' passwords the program read is gone once it ran."""
    [host] = [h for h in lab.brokers if (Path(h.vars["data_root"]) / "kafka-tools" / "ScramUsers.java").exists()]
    tools, uid = Path(host.vars["data_root"]) / "kafka-tools", int(host.vars["kafka_broker_service_user"])

    def as_broker(*command):
        return subprocess.run(
            ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *command], capture_output=True, text=True
        )

    for tried in (
        as_broker("touch", str(tools / "ScramUsers.java")),
        as_broker("touch", str(tools / "Other.java")),
    ):
        assert tried.returncode != 0 and "Permission denied" in tried.stderr, tried
    assert {f.name: (f.stat().st_uid, oct(f.stat().st_mode & 0o777)) for f in tools.iterdir()} == {
        "ScramUsers.java": (0, "0o644"),
    }


def test_the_passwords_are_pulumi_secrets_that_lab_up_copied_for_the_roles(lab):
    """Pulumi keeps them encrypted in the stack's state; its output, decrypted, is what the roles'
    files hold; the stack file in the checkout holds none."""
    from dcdrill.infra import ansible, pulumi_cli
    from dcdrill.infra.passwords import FILES

    made = pulumi_cli.outputs("local")["passwords"][lab.vars["cluster_name"]]
    tls = ansible.tls_dir("local")
    for kind, name in FILES.items():
        assert json.loads((tls / name).read_text()) == made[kind], kind
        assert oct((tls / name).stat().st_mode & 0o777) == "0o600"
    state = json.loads(pulumi_cli.run("local", "stack", "export", capture=True))
    kept = [
        r
        for r in state["deployment"]["resources"]
        if r["type"] == "pulumi-python:dynamic:Resource" and r["urn"].endswith(("::main-sasl", "::main-zookeeper"))
    ]
    assert len(kept) == 2 and all("ciphertext" in json.dumps(r["outputs"]["passwords"]) for r in kept)
    every = [pw for kind in made.values() for pw in kind.values()]
    assert not [pw for pw in every if pw in json.dumps(state)]  # nowhere in the state in the clear
    stack_file = (Path(__file__).resolve().parents[2] / "Pulumi.local.yaml").read_text()
    assert not [pw for pw in every if pw in stack_file]


def test_no_service_can_write_its_spec_or_the_folder_the_root_supervisor_reads_it_from(lab):
    """The supervisor runs as root what a spec names: for every service of the lab, its own uid
    can change neither the spec, nor its pidfile, nor the folder they live in."""
    from dcdrill.chaos.faults.lab import DC_LOSS_ROLES, spec_path

    checked = 0
    for host in lab.hosts(*DC_LOSS_ROLES):
        spec = Path(spec_path(host))
        uid = json.loads(spec.read_text())["user"]
        for command in (
            ["sh", "-c", f'echo "{{}}" >> {spec}'],
            ["touch", str(spec.parent / "other.json")],
            ["mv", str(spec), str(spec) + ".moved"],
            ["sh", "-c", f"echo 1 > {spec.with_suffix('.pid')}"],
        ):
            tried = subprocess.run(
                ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *command],
                capture_output=True,
                text=True,
            )
            assert tried.returncode != 0 and "denied" in tried.stderr, (host.name, command, tried.stderr)
        assert (spec.stat().st_uid, spec.parent.stat().st_uid) == (0, 0)
        checked += 1
    assert checked == len(lab.hosts(*DC_LOSS_ROLES)) >= 3
