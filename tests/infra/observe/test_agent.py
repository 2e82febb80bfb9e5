"""Observers run as agents on client hosts, reached through host access (infra/observe/hostaccess.py,
infra/observe/agent.py); the control never dials the cluster. What needs no lab: the command's shape,
the choice of host, a refused connection and an agent that ends with its session. The lab tests run
every status, health check and coordination watch through them."""

import json
import subprocess
import sys

import pytest

from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import hostaccess


def inventory(connection: dict | None = None) -> Inventory:
    """A one-broker cluster on loopback (127.0.0.1 refuses every port here: nothing is sent away)."""

    def host(role_id, dc, i):
        return {
            "dc": dc,
            role_id: i,
            "ansible_host": f"dcd-x{i}",
            "ansible_ssh_extra_args": f"-o HostName=10.77.{i}.13",
            **({"dcdrill_agent_dir": f"/lab/hosts/c{i}/agent"} if role_id == "client_id" else {}),
        }

    return Inventory(
        {
            "all": {
                "vars": {
                    "cluster_name": "t",
                    "kafka_coordination": "zookeeper",
                    "kafka_tls": False,
                    "kafka_sasl": False,
                    "ansible_user": "dcdrill",
                    "ansible_ssh_private_key_file": "/lab/ssh/id_ed25519",
                    "ansible_ssh_common_args": "-o LogLevel=ERROR",
                    **(connection or {}),
                },
                "children": {
                    "kafka_broker": {"hosts": {"127.0.0.1": host("broker_id", "dc-a", 1)}},
                    "zookeeper": {"hosts": {"127.0.0.1": host("zookeeper_id", "dc-a", 1)}},
                    "client": {
                        "hosts": {
                            "c1.dc-a.lab": host("client_id", "dc-a", 1),
                            "c2.dc-b.lab": host("client_id", "dc-b", 2),
                        }
                    },
                },
            }
        }
    )


def test_an_agent_is_started_through_ssh_as_the_login_user_and_becomes_root():
    inv = inventory()
    argv = hostaccess.agent_command(inv, inv.clients[0], "cluster_status")
    assert argv[0] == "ssh" and "dcdrill@dcd-x1" in argv and "HostName=10.77.1.13" in argv
    # the host's own Python (roles/dcdrill_agent), never the control's
    assert argv[-1] == "sudo -n /lab/hosts/c1/agent/venv/bin/python -m dcdrill.infra.observe.agent cluster_status"


def test_only_a_client_host_runs_agents():
    inv = inventory()
    with pytest.raises(hostaccess.HostAccessUnavailable, match="not a client host"):
        hostaccess.agent_command(inv, inv.brokers[0], "cluster_status")


def test_observers_avoid_the_dcs_a_drill_cuts_then_its_target():
    inv = inventory()
    assert [h.name for h in hostaccess.observers(inv)] == ["c1.dc-a.lab", "c2.dc-b.lab"]
    assert [h.name for h in hostaccess.observers(inv, avoid_dcs=("dc-a",))] == ["c2.dc-b.lab", "c1.dc-a.lab"]
    # isolate-then-power-loss: dc-b cut, then dc-a's power lost (its client survives it)
    assert [h.name for h in hostaccess.observers(inv, avoid_dcs=("dc-b", "dc-a"))] == ["c1.dc-a.lab", "c2.dc-b.lab"]


def test_a_connection_other_than_ssh_or_without_this_controls_key_is_refused_naming_it():
    inv = inventory({"ansible_connection": "amazon.aws.aws_ssm"})
    with pytest.raises(hostaccess.HostAccessUnavailable, match=r"\(amazon.aws.aws_ssm\)"):
        hostaccess.call(inv, "cluster_status")
    inv = inventory()  # an AWS stack's outputs as Pulumi left them, never written by `lab up` here
    del inv.vars["ansible_ssh_private_key_file"]
    with pytest.raises(hostaccess.HostAccessUnavailable, match="run `dcdrill lab up` here first"):
        hostaccess.call(inv, "cluster_status")


def test_a_host_that_does_not_answer_is_named(monkeypatch):
    # ssh's own exit code 255 on each client: the call names every host it tried.
    monkeypatch.setattr(hostaccess, "agent_command", lambda inv, host, call: ["sh", "-c", "echo refused >&2; exit 255"])
    with pytest.raises(hostaccess.HostUnreachable, match=r"c1.dc-a.lab: refused; c2.dc-b.lab: refused"):
        hostaccess.call(inventory(), "cluster_status")


def test_the_watch_agent_ends_when_its_session_does():
    proc = subprocess.Popen(
        [sys.executable, "-m", "dcdrill.infra.observe.agent", "watch"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    proc.stdin.write(hostaccess.payload(inventory(), "watch", {"interval_s": 0.2}))
    proc.stdin.flush()
    sample = json.loads(proc.stdout.readline())
    assert sample["answered"] is False and sample["error"] == "no broker reachable"
    proc.stdin.close()  # the control went away
    assert proc.wait(timeout=10) == 0


def test_the_agent_refuses_an_unknown_call():
    res = subprocess.run(
        [sys.executable, "-m", "dcdrill.infra.observe.agent", "rm-rf"], capture_output=True, text=True, input=""
    )
    assert res.returncode == 2 and "usage" in res.stderr


def test_an_agent_gets_the_stacks_ca_and_passwords_in_its_request_and_reads_no_file(tmp_path):
    """The host has no copy of the control's files (on the lab, host access hides them): the
    control reads the CA and passwords and sends them; the agent holds them in memory."""
    import shutil
    import ssl

    from dcdrill.infra import passwords, pki

    tls = pki.ensure(tmp_path / "tls", "t", {"b1.dc-a.lab": "dcd-b1"})
    creds = tmp_path / "tls" / "credentials.json"
    passwords.write(creds, {"admin": "a-secret", "workload": "w-secret"})
    inv = inventory(
        {
            "kafka_tls": True,
            "kafka_sasl": True,
            "zookeeper_secure": True,
            "kafka_tls_dir": str(tls),
            "kafka_sasl_credentials": str(creds),
            "kafka_sasl_admin": "admin",
            "kafka_sasl_client": "workload",
            "lab_control_state": str(tmp_path),
        }
    )
    request = json.loads(hostaccess.payload(inv, "cluster_status", {"x": 1}))
    # each call is sent the password of the user it connects as, no other
    assert request["secrets"]["passwords"] == {"admin": "a-secret"}
    canary = json.loads(hostaccess.payload(inv, "canary", {}))["secrets"]
    assert canary["passwords"] == {"workload": "w-secret"} and canary["ca_pem"] == request["secrets"]["ca_pem"]
    assert "passwords" in json.loads(hostaccess.payload(inv, "mirror_status", {}))["secrets"]
    assert json.loads(hostaccess.payload(inv, "mirror_status", {}))["secrets"]["passwords"] == {}
    shutil.rmtree(tmp_path / "tls")  # what the host sees: nothing of the control's
    agent = Inventory(request["inventory"], secrets=request["secrets"])
    admin = agent.client_security(admin=True)
    assert admin["sasl_plain_username"] == "admin" and admin["sasl_plain_password"] == "a-secret"
    assert isinstance(admin["ssl_context"], ssl.SSLContext) and "ssl_cafile" not in admin
    with pytest.raises(ValueError, match="not sent workload's password"):
        agent.client_security()
    assert Inventory(request["inventory"], secrets=canary).client_security()["sasl_plain_username"] == "workload"
    assert isinstance(agent.zookeeper_tls(), ssl.SSLContext)
    # and the lab's host access runs the agent where the control's state folder is an empty tmpfs
    argv = hostaccess.agent_command(inv, inv.clients[0], "cluster_status")
    assert argv[-1].startswith("sudo -n unshare --mount --propagation private sh -c") and str(tmp_path) in argv[-1]
