"""What every activity shares: the stack it targets, the drill record it writes into, the
topology under the drill's own settings, and the fault driver of the stack's backend.

Configuration keys (experiment `configuration`, or `chaos run --var key=value`):
  stack     the Pulumi stack (default: local)
  run_dir   the drill record directory, runs/<drill-id>
  observers_avoid  the DCs observers stay out of, most first (observers_avoid below)
  client, idempotence  the workload's producer client, and on / off / default (its own)
  transaction_size, abort_fraction  records per transaction (0: none) and the share aborted
`dcdrill drill` gives `chaos run` the record's plan.json as its var file: these keys and the
rest of the experiment's configuration arrive typed (a float hold, a bool keep_topic). The
drill's own settings (`dcdrill drill --acks ...`) are in the same file, read once per process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Annotated

from pydantic import ConfigDict, TypeAdapter, ValidationError

from dcdrill.infra import lifecycle
from dcdrill.infra import stack as stacks
from dcdrill.infra.backend import Backend
from dcdrill.infra.constants import DRILL_TOPIC_PREFIX
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.topology import Topology
from dcdrill.record import DrillRecord, models
from dcdrill.record.contents import TOPOLOGY

STRICT = ConfigDict(strict=True)


def stack_name(configuration: dict | None) -> str:
    return (configuration or {}).get("stack", "local")


def run_dir(configuration: dict | None) -> Path:
    rd = (configuration or {}).get("run_dir")
    if not rd:
        raise ValueError("configuration.run_dir is required (the drill record directory)")
    return Path(rd)


def record(configuration: dict | None) -> DrillRecord:
    return DrillRecord(run_dir(configuration))


def deployment(configuration: dict | None) -> Deployment:
    """Every cluster and mirror of the stack, under the drill's own settings if the record has
    some: the activities run in `chaos run`'s process, not the drill's, and load it once there."""
    rd = (configuration or {}).get("run_dir")
    return deployment_for(stack_name(configuration), DrillRecord(rd) if rd else None)


def deployment_for(stack: str, record: DrillRecord | None) -> Deployment:
    """The stack under the settings `record` holds (its plan.json), if any."""
    if record is None or record.remote:
        return _deployment_of(stack, None)
    return _deployment_of(stack, record.path.resolve())


@functools.lru_cache(maxsize=16)
def _deployment_of(stack: str, run: Path | None) -> Deployment:
    """Once per process and record. A drill's plan and topology.json are written before the
    experiment: the stack read here must still be the one they were resolved from."""
    d = stacks.load_deployment(stack)
    if run is None:
        return d
    rec = DrillRecord(run)
    own = rec.settings()
    d = d.with_settings(own) if own else d
    if rec.has_topology():
        written = rec.read_json(TOPOLOGY)
        now = json.loads(json.dumps(stacks.drill_topology(stack, d)))  # as the file holds it
        changed = sorted(k for k in written.keys() | now.keys() if written.get(k) != now.get(k))
        if changed:
            raise ValueError(
                f"{rec.file(TOPOLOGY)}: stack {stack!r} no longer resolves to the topology this drill "
                f"began with (changed: {', '.join(changed)}); was its stack file edited mid-drill?"
            )
    return d


def topology(configuration: dict | None) -> Topology:
    """The stack's cluster (a replicated stack's home cluster), under the drill's own settings."""
    return deployment(configuration).home


def backend(configuration: dict | None) -> Backend:
    return stacks.backend(stack_name(configuration))


def inventory(configuration: dict | None) -> Inventory:
    return lifecycle.inventory(stack_name(configuration))


def drill_topic(configuration) -> str:
    """A fresh topic per drill: the audit then reads this drill's records and nothing older. The
    record folder's name, plus a digest of its whole path: the drills of two series share names
    (drill-1, ...), and a --matrix series has a drill-1 per setting."""
    rd = run_dir(configuration).resolve()
    name = re.sub(r"[^A-Za-z0-9._-]", "-", rd.name)[:200]  # what Kafka allows in a topic name
    return f"{DRILL_TOPIC_PREFIX}{name}-{hashlib.sha1(str(rd).encode()).hexdigest()[:8]}"


def target_dc(configuration: dict | None) -> str | None:
    """The DC the experiment targets (its `dc` variable), None for one that targets none."""
    return (configuration or {}).get("dc")


def observers_avoid(configuration: dict | None) -> tuple[str, ...]:
    """The DCs the drill's observers (hostaccess.observers) stay out of, the first the most: the
    plan's `observers_avoid` (the DCs the experiment cuts, then its target), else its target."""
    config = configuration or {}
    avoid = config.get("observers_avoid") or ([config["dc"]] if config.get("dc") else [])
    for dc in avoid:
        if not isinstance(dc, str):
            raise ValueError(f"configuration.observers_avoid: {dc!r} is not a DC name")
        check_dc(configuration, dc)
    return tuple(avoid)


def _planned(configuration: dict | None, key: str):
    """A plan key as record/models.PlanConfiguration types it (its default when the experiment's
    configuration lacks it): one model for plan.json and for what `chaos run` hands on."""
    field = models.PlanConfiguration.model_fields[key]
    value = (configuration or {}).get(key, field.default)
    try:
        return TypeAdapter(Annotated[field.annotation, field], config=STRICT).validate_python(value)
    except ValidationError as exc:
        raise ValueError(f"configuration.{key}: {value!r}: {exc.errors(include_url=False)[0]['msg']}") from None


def producer_client(configuration: dict | None) -> tuple[str, bool | None]:
    """The plan's producer client and its idempotence (None: the client's default)."""
    idempotence = _planned(configuration, "idempotence")
    return _planned(configuration, "client"), None if idempotence == "default" else idempotence == "on"


def transactions(configuration: dict | None) -> tuple[int | None, float]:
    """The plan's records per transaction (None: no transactions) and abort share."""
    return _planned(configuration, "transaction_size") or None, float(_planned(configuration, "abort_fraction"))


def check_dc(configuration: dict | None, dc: str) -> None:
    names = deployment(configuration).dc_names
    if dc not in names:
        raise ValueError(f"unknown DC {dc!r}; valid: {', '.join(names)}")
