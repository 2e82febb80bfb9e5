"""ssh to an EC2 host through SSM (infra/aws/ssm_tunnel.py): the requests checked against the
real service models (botocore's Stubber), the plugin started as the AWS CLI starts it, the
ProxyCommand as ssh itself parses it. Nothing here dials anything."""

import json
import os
import shlex
import subprocess
import sys

import boto3
import pytest
from botocore.stub import Stubber

from dcdrill.infra.aws import plan, ssm_tunnel
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.stack import load, load_config

REGION = "eu-west-1"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIsUhzzt8dkOa3BIFeC8OkAn6rGyW8AvTqPYlM77nv6q control"
SESSION = {
    "SessionId": "ci-runner-0a1b2c3d4e",
    "TokenValue": "secret-token",
    "StreamUrl": "wss://ssmmessages.example/s",
}


@pytest.fixture
def clients(monkeypatch, tmp_path):
    """boto3's clients for the tunnel, each behind a Stubber; a plugin stand-in on PATH."""
    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "DCDRILL_CACHE": str(tmp_path / "cache"),
    }.items():
        monkeypatch.setenv(k, v)
    made = {name: boto3.client(name, region_name=REGION) for name in ("ec2-instance-connect", "ssm")}
    stubs = {name: Stubber(c) for name, c in made.items()}
    monkeypatch.setattr(boto3, "client", lambda name, region_name: made[name])
    (tmp_path / "bin").mkdir()
    plugin = tmp_path / "bin" / ssm_tunnel.PLUGIN
    plugin.write_text("#!/bin/sh\n")
    plugin.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    for s in stubs.values():
        s.activate()
    yield stubs, plugin
    for s in stubs.values():
        s.assert_no_pending_responses()


def _expect_key_and_session(stubs):
    stubs["ec2-instance-connect"].add_response(
        "send_ssh_public_key",
        {"RequestId": "r-1", "Success": True},
        {"InstanceId": "i-0123456789abcdef0", "InstanceOSUser": "dcdrill", "SSHPublicKey": KEY},
    )
    stubs["ssm"].add_response(
        "start_session",
        SESSION,
        {"Target": "i-0123456789abcdef0", "DocumentName": "AWS-StartSSHSession", "Parameters": {"portNumber": ["22"]}},
    )


def test_the_key_goes_first_then_the_session_and_the_plugin_gets_it_as_the_aws_cli_passes_it(clients):
    stubs, plugin = clients
    _expect_key_and_session(stubs)
    argv, env = ssm_tunnel.open_session("i-0123456789abcdef0", 22, "dcdrill", KEY, REGION)
    assert argv[0] == str(plugin)
    # The plugin's own argument order (its session.go: response, region, operation, profile,
    # parameters, endpoint); the response passed by the name of a variable, so the session's
    # token never shows on a command line.
    assert argv[1:5] == [ssm_tunnel.RESPONSE_VARIABLE, REGION, "StartSession", ""]
    assert json.loads(argv[5]) == {
        "Target": "i-0123456789abcdef0",
        "DocumentName": "AWS-StartSSHSession",
        "Parameters": {"portNumber": ["22"]},
    }
    assert argv[6] == f"https://ssm.{REGION}.amazonaws.com"
    assert json.loads(env[ssm_tunnel.RESPONSE_VARIABLE]) == SESSION
    assert "secret-token" not in " ".join(argv)


def test_without_the_plugin_the_session_is_ended_at_once(clients):
    stubs, plugin = clients
    _expect_key_and_session(stubs)
    stubs["ssm"].add_response(
        "terminate_session", {"SessionId": SESSION["SessionId"]}, {"SessionId": SESSION["SessionId"]}
    )
    plugin.unlink()
    with pytest.raises(FileNotFoundError, match="dcdrill setup"):
        ssm_tunnel.open_session("i-0123456789abcdef0", 22, "dcdrill", KEY, REGION)


def test_the_command_refuses_before_any_call_when_the_plugin_or_the_key_is_missing(tmp_path):
    env = {
        **os.environ,
        "PATH": "/usr/bin:/bin",
        "DCDRILL_CACHE": str(tmp_path),
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
    }
    run = [
        sys.executable,
        "-m",
        "dcdrill.infra.aws.ssm_tunnel",
        "--region",
        REGION,
        "--public-key",
        str(tmp_path / "none.pub"),
        "i-0123456789abcdef0",
        "22",
        "dcdrill",
    ]
    res = subprocess.run(run, capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 2 and "session-manager-plugin" in res.stderr
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / ssm_tunnel.PLUGIN).write_text("#!/bin/sh\n")
    (tmp_path / "bin" / ssm_tunnel.PLUGIN).chmod(0o755)
    res = subprocess.run(run, capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 2 and "none.pub" in res.stderr


def test_an_aws_inventory_gets_this_controls_key_and_each_hosts_tunnel_in_its_region(tmp_path):
    stack = "aws-2region-tiebreaker"
    t = load(stack)
    ids = {h.name: f"i-{n:017x}" for n, h in enumerate(t.hosts())}
    inventory = Inventory(plan.inventory(t, load_config(stack), instance_ids=ids).data)
    ssm_tunnel.connect(inventory, tmp_path / "ssh")
    av = inventory.vars
    assert av["ansible_connection"] == "ssh" and av["ansible_user"] == "dcdrill"
    key = tmp_path / "ssh" / "id_ed25519"
    assert av["ansible_ssh_private_key_file"] == str(key) and key.with_suffix(".pub").read_text().startswith(
        "ssh-ed25519"
    )
    regions = {dc.name: dc.region for dc in t.datacenters}
    assert len(set(regions.values())) > 1
    for host in inventory.hosts():
        # ssh itself parses what Ansible and host access pass it (-G: print the configuration, dial nothing)
        res = subprocess.run(
            [
                "ssh",
                "-G",
                *shlex.split(av["ansible_ssh_common_args"]),
                *shlex.split(host.vars["ansible_ssh_extra_args"]),
                f"dcdrill@{host.address}",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        config = dict(line.split(" ", 1) for line in res.stdout.splitlines())
        assert config["proxycommand"] == (
            f"{sys.executable} -m dcdrill.infra.aws.ssm_tunnel --region "
            f"{regions[host.dc]} --public-key {key}.pub %h %p %r"
        )
        assert config["stricthostkeychecking"] == "true"  # learned at first contact (host_keys), then checked
        assert config["userknownhostsfile"] == str(tmp_path / "ssh" / "known_hosts")
    before = key.read_bytes()
    ssm_tunnel.connect(inventory, tmp_path / "ssh")
    assert key.read_bytes() == before  # one key per control, kept


def test_the_plugin_setup_built_runs():
    """`make setup` builds AWS's plugin from the Go module proxy (infra/toolchain/ssm-plugin)."""
    found = ssm_tunnel.plugin()
    assert found, "no session-manager-plugin: make setup builds it"
    res = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 0 and res.stdout.strip()[0].isdigit(), res.stdout + res.stderr
