"""A KRaft cluster's identities, made once per stack and kept beside its CA: the cluster id and
each controller's metadata directory id. Every node is formatted with the same cluster id, and
the controllers with the same `--initial-controllers` list (KIP-853's dynamic quorum), so both
must survive a second `lab up` unchanged: a new id would make the first run's disks foreign.
"""

from __future__ import annotations

import base64
import secrets
from pathlib import Path

from dcdrill.infra.constants import read_state_json, write_json_atomically
from dcdrill.infra.ports import CONTROLLER_PORT


def new_uuid() -> str:
    """A random Kafka Uuid as Kafka prints it: 16 bytes, URL-safe base64 without padding. Like
    Kafka's own Uuid.randomUuid, none starts with '-' (a command line would read it as a flag)."""
    while True:
        text = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def ensure(path: Path, controllers: list[str]) -> dict:
    """{"cluster_id": ..., "directory_ids": {controller: id}} in `path` (JSON); kept when present,
    with ids added for controllers new to the stack."""
    known = read_state_json(path, {}, dict)
    ids = known.get("directory_ids", {})
    wanted = {
        "cluster_id": known.get("cluster_id") or new_uuid(),
        "directory_ids": {name: ids.get(name) or new_uuid() for name in sorted(controllers)},
    }
    if wanted != known:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomically(path, wanted)
    return wanted


def initial_controllers(controllers: dict[str, int], directory_ids: dict[str, str], port: int = CONTROLLER_PORT) -> str:
    """kafka-storage format's --initial-controllers: `id@host:port:directory-id,...` by node id."""
    return ",".join(
        f"{node}@{name}:{port}:{directory_ids[name]}"
        for name, node in sorted(controllers.items(), key=lambda kv: kv[1])
    )
