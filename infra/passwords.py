"""The passwords of a stack's SASL users (`dcdrill:cluster.sasl`): one random password per user
in credentials.json (0600), next to the stack's CA. Existing ones are kept, so a second
`lab up` changes nothing. Child processes get the file's name, never the password.
"""
from __future__ import annotations

import json
import secrets
from pathlib import Path


def ensure(path: Path, users: list[str]) -> Path:
    """A random password per user in `path` (JSON, 0600); existing ones are kept."""
    known = json.loads(path.read_text()) if path.exists() else {}
    wanted = {u: known.get(u) or secrets.token_urlsafe(24) for u in sorted(users)}
    if wanted != known:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(json.dumps(wanted, indent=2, sort_keys=True) + "\n")
    return path


def password(path: str, user: str) -> str:
    try:
        return json.loads(Path(path).read_text())[user]
    except (OSError, KeyError, ValueError) as exc:
        raise ValueError(f"no password for SASL user {user!r} in {path}: configure the stack first "
                         f"(`dcdrill lab up`) ({exc})") from None
