"""What the control needs before it can drive an AWS stack, checked before a drill starts
(`dcdrill drill --check`, and every drill's preflight): Ansible's SSM connection (the
`amazon.aws` collection and AWS's session-manager-plugin it runs sessions through) and
credentials boto3 can find. Each missing piece is named with how to install it."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

COLLECTION = "amazon.aws"


def _collection_installed() -> bool:
    galaxy = Path(sys.executable).parent / "ansible-galaxy"
    if not galaxy.exists():
        return False
    res = subprocess.run([str(galaxy), "collection", "list", COLLECTION, "--format", "json"],
                         capture_output=True, text=True, timeout=60)
    try:
        return any(COLLECTION in found for found in json.loads(res.stdout or "{}").values())
    except json.JSONDecodeError:
        return False


# boto3's providers that would dial a metadata service (169.254.x): a preflight reads files and the
# environment only, so it sends nothing anywhere.
DIALING_PROVIDERS = ("iam-role", "container-role")


def _credentials() -> bool:
    import botocore.session

    session = botocore.session.get_session()
    resolver = session.get_component("credential_provider")
    for name in DIALING_PROVIDERS:
        resolver.remove(name)
    return resolver.load_credentials() is not None


def missing() -> list[str]:
    """One sentence per missing prerequisite, with how to get it; empty when all are there."""
    out = []
    if not _collection_installed():
        out.append(f"Ansible's `{COLLECTION}` collection (its aws_ssm connection reaches the hosts): "
                   f"`ansible-galaxy collection install {COLLECTION}`, or `pip install ansible`, which bundles it")
    if shutil.which("session-manager-plugin") is None:
        out.append("AWS's session-manager-plugin on PATH (aws_ssm opens its sessions through it): "
                   "https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-install-plugin.html")
    if not _credentials():
        out.append("AWS credentials (none in the environment or a profile; an instance role is not probed): "
                   "export AWS_PROFILE or AWS_* keys, or the CI recipe's OIDC role (docs/ci/)")
    return out
