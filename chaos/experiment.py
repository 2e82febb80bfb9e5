"""dcdrill's Chaos Toolkit experiments: one shared shape (chaos/experiments/_drill.json) and one
short file per fault (its title, its own configuration keys and its fault activities), composed
into a complete experiment here. A new fault is a file of a few lines.

`dcdrill experiment NAME` prints the composed experiment, for a plain `chaos run`; `dcdrill
drill` writes it into the drill record (experiment.json) and runs that. `preflight` is the check
`dcdrill drill --check` makes before anything starts.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from dcdrill.chaos.faults import actions, driver_class
from dcdrill.chaos.faults.driver import DIRECTIONS, FaultDriver
from dcdrill.infra import rules
from dcdrill.infra.backend import Backend
from dcdrill.infra.topology import Topology

FOLDER = Path(__file__).resolve().parent / "experiments"
SHAPE = FOLDER / "_drill.json"
MARKER = "x-dcdrill-fault"  # where the fault's activities go in the shape's method
MIRRORED = "x-dcdrill-mirrored"  # a fault file's flag: wrap its fault in the shape's MIRROR_WAITS
MIRROR_WAITS = "x-dcdrill-mirror-waits"
FAULT_MODULE = "dcdrill.chaos.faults.actions"


def names() -> list[str]:
    return sorted(p.stem for p in FOLDER.glob("*.json") if not p.name.startswith("_"))


def compose(name: str) -> dict:
    """The complete experiment: the shared shape with this fault's title, configuration and activities."""
    if name not in names():
        raise ValueError(f"unknown experiment {name!r}; valid: {', '.join(names())}")
    shape = json.loads(SHAPE.read_text())
    shape.pop("$comment", None)
    waits = shape.pop(MIRROR_WAITS)
    part = json.loads((FOLDER / f"{name}.json").read_text())
    fault = part["fault"]
    mirrored = part.get(MIRRORED)
    if mirrored:  # a replicated stack's fault: from a mirror that keeps up, until it caught up again
        fault = [waits["before"], *fault, waits["after"]]
    out = {
        "version": shape.pop("version"),
        "title": part["title"],
        "description": part["description"],
        **copy.deepcopy(shape),
    }
    out["configuration"] = {**shape["configuration"], **part.get("configuration", {})}
    method = []
    for activity in shape["method"]:
        method += copy.deepcopy(fault) if MARKER in activity else [activity]
    out["method"] = method + ([waits["last"]] if mirrored else [])
    for activity in fault_activities(out):  # each fault action gets the credentials its driver may need
        activity["provider"]["secrets"] = [SECRETS]
    # Chaos Toolkit's place for a tool's own data: the record names its experiment (junit.xml's classname).
    out["extensions"] = [{"name": "dcdrill", "experiment": name}]
    return out


SECRETS = "aws"  # the experiment's secrets target the fault actions read (_drill.json)
MIRROR_FUNCS = {
    "fail_over_consumers",
    "kill_mirror",
    "wait_mirrored",
    "record_mirror_events",
}  # only a replicated stack has what they act on


def needs_mirrors(experiment: dict) -> bool:
    every = experiment.get("method", []) + experiment.get("rollbacks", [])
    return any(a.get("provider", {}).get("func") in MIRROR_FUNCS for a in every)


def fault_activities(experiment: dict) -> list[dict]:
    """The activities of the experiment that call a fault action (chaos/faults/actions.py)."""
    every = experiment.get("method", []) + experiment.get("rollbacks", [])
    return [a for a in every if a.get("provider", {}).get("module") == FAULT_MODULE]


def preflight(
    experiment: dict, t: Topology, backend: Backend, variables: dict, dc_names: list[str] | None = None
) -> list[str]:
    """What stops this experiment on this stack, as sentences; empty: it can run. Starts nothing.

    Chaos Toolkit's own validation (every module, function and argument resolves), then: every
    fault it names exists on the backend's driver, and applies to the topology (a DC it names is
    one of the stack's, a tiebreaker loss needs a tiebreaker DC). `dc_names`: every DC of a
    replicated stack (`t` is its home cluster)."""
    from chaoslib.exceptions import InvalidExperiment
    from chaoslib.experiment import ensure_experiment_is_valid

    problems = []
    try:
        ensure_experiment_is_valid(experiment)
    except InvalidExperiment as exc:
        problems.append(f"Chaos Toolkit refuses the experiment: {exc}")
    drv = driver_class(backend)
    config = {**experiment.get("configuration", {}), **variables}
    for a in fault_activities(experiment):
        func = a["provider"]["func"]
        need = actions.NEEDS.get(func)
        method = getattr(drv, need, None) if need else None
        if (
            method is None
            or getattr(method, "__isabstractmethod__", False)
            or method is getattr(FaultDriver, need, None)
            and need not in FaultDriver.__abstractmethods__
        ):
            problems.append(f"fault {func!r} does not exist on the {backend.name} backend's driver ({drv.__name__})")
            continue
        if why := backend.cannot(need):
            problems.append(f"{a['name']}: {why}")
        for key, value in a["provider"].get("arguments", {}).items():
            value = _substitute(value, config)
            valid = dc_names or t.dc_names
            if key in ("dc", "other_dc") and value not in valid:
                problems.append(f"{a['name']}: {key} {value!r} is not a DC of the stack; valid: {', '.join(valid)}")
            if key == "direction" and value not in DIRECTIONS:
                problems.append(f"{a['name']}: direction {value!r}; valid: {', '.join(DIRECTIONS)}")
        target = _substitute(a["provider"].get("arguments", {}).get("dc"), config)
        if (
            func == "power_loss"
            and target in t.dc_names
            and not rules.quorum_survives(t, target)
            and "quorum-dc-loss" not in t.accept_risks
        ):
            problems.append(
                f"{a['name']}: a power loss of {target} takes the {t.voter_noun}' majority with it, and "
                "with it what they had not flushed; list quorum-dc-loss in dcdrill:acceptRisks to drill it"
            )
        if func == "kill_tiebreaker" and not rules.tiebreakers(t):
            suffix = "ctl" if t.kraft else "zk"
            problems.append(
                f"{a['name']}: the stack has no tiebreaker DC (one with {t.voter_noun} and no brokers; "
                f"DCs: {', '.join(f'{d.name} {d.brokers}b/{t.voters_in(d.name)}{suffix}' for d in t.datacenters)})"
            )
    return problems


def observers_avoid(experiment: dict, variables: dict) -> list[str]:
    """The DCs the drill's observers stay out of (hostaccess.observers), the first the most: those
    the experiment's isolate-dc actions cut, in the order they act (their clients are cut off
    too), then its target `dc`."""
    config = {**experiment.get("configuration", {}), **variables}
    cut = [
        _substitute(a["provider"].get("arguments", {}).get("dc"), config)
        for a in fault_activities(experiment)
        if a["provider"]["func"] == "isolate_dc"
    ]
    target = [variables["dc"]] if variables.get("dc") else []
    return list(dict.fromkeys(dc for dc in [*cut, *target] if isinstance(dc, str)))


def _substitute(value, config: dict):
    """`${key}` as Chaos Toolkit substitutes it from the configuration (whole-string form only)."""
    if isinstance(value, str) and value.startswith("${") and value.endswith("}"):
        return config.get(value[2:-1], value)
    return value
