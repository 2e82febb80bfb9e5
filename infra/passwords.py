"""The passwords of a stack's SASL users (`dcdrill:cluster.sasl`) and of its ZooKeeper logins, as
the roles and clients read them: one JSON file per cluster and kind (0600), next to the stack's
CA. Pulumi keeps them, as secrets (infra/pulumi_passwords.py); `lab up` writes these files from
its `passwords` output. Child processes get the file's name, never the password.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

FILES = {"sasl": "credentials.json", "zookeeper": "zookeeper-credentials.json"}  # in each cluster's tls folder
ZOOKEEPER_USERS = ("kafka", "quorum")  # roles/zookeeper: the brokers' login, and the quorum peers'

# What a password may be (docs/security.md): it reaches JAAS files (quoted), the users file the
# SCRAM program splits on white space, and the KRaft format's argument file. The ones dcdrill
# makes (secrets.token_urlsafe) are of this set.
PATTERN = re.compile(r"^[A-Za-z0-9_.~+@-]{12,128}$")
RULE = "12 to 128 characters, each a letter, a digit or one of _ - . ~ + @"


def refusals(found: dict, where: str) -> list[str]:
    """Each password in `found` (nested dicts, passwords at the leaves) that breaks RULE, named by
    its key under `where` (never its value)."""
    out = []
    for key, value in sorted((found or {}).items()):
        if isinstance(value, dict):
            out += refusals(value, f"{where}.{key}")
        elif not (isinstance(value, str) and PATTERN.match(value)):
            out.append(f"{where}.{key}: a password must be {RULE}")
    return out


def write(path: Path, passwords: dict[str, str]) -> Path:
    """`passwords` ({user: password}) in `path`, as JSON readable by its owner only; rewritten only
    when they changed."""
    text = json.dumps(dict(sorted(passwords.items())), indent=2, sort_keys=True) + "\n"
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_text(text)
    return path


def password(path: str, user: str) -> str:
    try:
        return json.loads(Path(path).read_text())[user]
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(
            f"no password for SASL user {user!r} in {path}: configure the stack first (`dcdrill lab up`) ({exc})"
        ) from None
