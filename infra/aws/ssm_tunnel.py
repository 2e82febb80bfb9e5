"""SSH to an EC2 host through Systems Manager: ssh's ProxyCommand on an AWS stack, so host access
(infra/observe/hostaccess.py) and Ansible take the same path on both backends, SSH as an unprivileged
login user, where the lab's hosts are one `ip` route away and AWS's have no address the control
can reach. No port is opened for it: SSM's agent on the host dials out to SSM, and the session
(document AWS-StartSSHSession) ends at the host's own sshd on localhost.

Each connection first hands the host the control's public key for the login user through EC2
Instance Connect (valid for 60 seconds, long enough for ssh to authenticate), so no key lives in
the stack's user data or state, and a CI runner's key is its own.

    ssh -o ProxyCommand='python -m dcdrill.infra.aws.ssm_tunnel --region eu-west-1 \
        --public-key K.pub %h %p %r' dcdrill@i-0abc

What `aws ssm start-session` does for its plugin is done here with boto3, so the control needs
no AWS CLI: StartSession, then AWS's session-manager-plugin (built by `dcdrill setup`) carries
ssh's bytes over the session's stream.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from dcdrill.infra.inventory import Inventory

DOCUMENT = "AWS-StartSSHSession"
PLUGIN = "session-manager-plugin"
# The plugin reads the session from this variable when named in its first argument (since 1.2.497.0).
RESPONSE_VARIABLE = "AWS_SSM_START_SESSION_RESPONSE"


def plugin() -> str | None:
    """The session-manager-plugin this control runs: one on PATH, else the one setup built."""
    from dcdrill.infra.constants import cache_dir

    built = cache_dir() / "bin" / PLUGIN
    return shutil.which(PLUGIN) or (str(built) if os.access(built, os.X_OK) else None)


def proxy_command(region: str, public_key: Path) -> str:
    """ssh's ProxyCommand for a host of `region` (%h: the instance id, %p: the port, %r: the login user)."""
    return f"{sys.executable} -m dcdrill.infra.aws.ssm_tunnel --region {region} --public-key {public_key} %h %p %r"


def connect(inventory: Inventory, ssh_dir: Path) -> None:
    """Give an AWS inventory this control's way in (what `lab up` writes before Ansible runs): its
    own key pair in `ssh_dir` (made once per control, never uploaded: each connection hands the
    host its public half) and each host's ProxyCommand through SSM in its region. A host's key is
    learned at first contact (infra/host_keys.py), since the tunnel already proved which instance
    it reached, and checked from then on."""
    ssh_dir.mkdir(parents=True, exist_ok=True)
    key = ssh_dir / "id_ed25519"
    if not key.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dcdrill-control", "-f", str(key)],
            check=True,
            stdin=subprocess.DEVNULL,
            capture_output=True,
        )
    av = inventory.vars
    av["ansible_ssh_private_key_file"] = str(key)
    av["ansible_ssh_common_args"] = (
        f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={ssh_dir / 'known_hosts'} -o LogLevel=ERROR"
    )
    for host in inventory.hosts():
        command = proxy_command(host.vars["aws_region"], key.with_suffix(".pub"))
        host.vars["ansible_ssh_extra_args"] = f"-o {shlex.quote('ProxyCommand=' + command)}"


def open_session(instance: str, port: int, user: str, public_key: str, region: str) -> tuple[list[str], dict]:
    """Hand `instance` the key for `user`, start an SSH session to its `port`; the plugin's argv and
    environment, as the AWS CLI passes them."""
    import boto3

    boto3.client("ec2-instance-connect", region_name=region).send_ssh_public_key(
        InstanceId=instance, InstanceOSUser=user, SSHPublicKey=public_key
    )
    ssm = boto3.client("ssm", region_name=region)
    parameters = {"Target": instance, "DocumentName": DOCUMENT, "Parameters": {"portNumber": [str(port)]}}
    started = ssm.start_session(**parameters)
    found = plugin()
    if found is None:  # checked before too; a session left open would hold until SSM's idle timeout
        ssm.terminate_session(SessionId=started["SessionId"])
        raise FileNotFoundError(f"no {PLUGIN} on PATH or in dcdrill's cache: run `dcdrill setup`")
    session = {k: started[k] for k in ("SessionId", "TokenValue", "StreamUrl")}
    env = {**os.environ, RESPONSE_VARIABLE: json.dumps(session)}
    return [found, RESPONSE_VARIABLE, region, "StartSession", "", json.dumps(parameters), ssm.meta.endpoint_url], env


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m dcdrill.infra.aws.ssm_tunnel",
        description="ssh's ProxyCommand to an EC2 host through SSM (AWS-StartSSHSession)",
    )
    p.add_argument("--region", required=True, help="the instance's region")
    p.add_argument("--public-key", required=True, type=Path, help="the control's public key, handed to the host")
    p.add_argument("instance", help="the instance id (ssh's %%h: the inventory's ansible_host)")
    p.add_argument("port", type=int, help="the host's sshd port (ssh's %%p)")
    p.add_argument("user", help="the login user the key is for (ssh's %%r)")
    a = p.parse_args(argv)
    if plugin() is None:
        print(f"ssm_tunnel: no {PLUGIN} on PATH or in dcdrill's cache: run `dcdrill setup`", file=sys.stderr)
        return 2
    try:
        key = a.public_key.read_text().strip()
    except OSError as exc:
        print(f"ssm_tunnel: {a.public_key}: {exc.strerror}", file=sys.stderr)
        return 2
    argv_, env = open_session(a.instance, a.port, a.user, key, a.region)
    sys.stdout.flush()
    os.execve(argv_[0], argv_, env)  # ssh's stdin and stdout are the plugin's from here on


if __name__ == "__main__":
    sys.exit(main())
