"""Faults that AWS Fault Injection Service (FIS) runs for the AWS driver (chaos/faults/aws.py): a
DC's clean stop and its isolation both ways. FIS holds each fault for a bounded time and then
undoes it itself, so a runner lost mid-drill leaves nothing broken for longer than that; heal
stops the experiment early, which runs FIS's own undo at once.

An experiment needs a template. Each fault makes its own, tagged with the stack's tag and a token
noted in the fault's undo before the template exists, so heal finds it (and its experiments)
whatever step a crash stopped at, then deletes it.
"""

from __future__ import annotations

import math
import time
import uuid

from dcdrill.infra.aws.plan import STACK_TAG

STOP_INSTANCES = "aws:ec2:stop-instances"
DISRUPT_CONNECTIVITY = "aws:network:disrupt-connectivity"
FAULT_TAG = "dcdrill-fault"  # the token a fault's template and experiment carry
ENDED = ("completed", "stopped", "failed", "cancelled")
POLL_S = 5.0
WAIT_S = 600.0  # how long a start or a stop may take before the driver gives up
# FIS's bounds on an action's duration (startInstancesAfterDuration, duration).
MIN_MINUTES, MAX_MINUTES = 1, 12 * 60


def duration(seconds: float) -> str:
    """ISO 8601 in whole minutes, rounded up and within FIS's bounds: "PT15M"."""
    minutes = min(MAX_MINUTES, max(MIN_MINUTES, math.ceil(seconds / 60)))
    return f"PT{minutes}M"


def new_token() -> str:
    return uuid.uuid4().hex


def template(fault: str, token: str, role_arn: str, stack_tag: str | None, targets: dict, actions: dict) -> dict:
    """CreateExperimentTemplate's request: the fault's actions (started together) on their target
    groups, no stop condition (heal is the stop), tagged so the driver's policy and heal can tell
    it is this stack's."""
    tags = {FAULT_TAG: token, "dcdrill": fault, **({STACK_TAG: stack_tag} if stack_tag else {})}
    return {
        "clientToken": token,
        "description": f"dcdrill {fault}",
        "roleArn": role_arn,
        "stopConditions": [{"source": "none"}],
        "targets": targets,
        "actions": actions,
        "tags": tags,
    }


# FIS takes at most 5 resource ARNs per target (its quotas: "Resource ARNs per target"): a DC of
# more instances is stopped by one action per 5, all in one experiment and started together.
MAX_TARGET_ARNS = 5


def stop_instances(instance_arns: list[str], limit_s: float) -> tuple[dict, dict]:
    """The targets and actions of a clean stop that FIS undoes (starts the instances) after
    `limit_s`: one target of at most MAX_TARGET_ARNS instances per action ("fault", "fault-2", ...)."""
    arns = sorted(instance_arns)
    targets, actions = {}, {}
    for n, first in enumerate(range(0, len(arns), MAX_TARGET_ARNS), 1):
        suffix = "" if n == 1 else f"-{n}"
        targets[f"instances{suffix}"] = {
            "resourceType": "aws:ec2:instance",
            "resourceArns": arns[first : first + MAX_TARGET_ARNS],
            "selectionMode": "ALL",
        }
        actions[f"fault{suffix}"] = {
            "actionId": STOP_INSTANCES,
            "parameters": {"startInstancesAfterDuration": duration(limit_s)},
            "targets": {"Instances": f"instances{suffix}"},
        }
    return targets, actions


def disrupt_subnet(subnet_arn: str, limit_s: float) -> tuple[dict, dict]:
    """The targets and action of a subnet cut both ways (FIS's `all` scope: a deny-all network ACL
    swapped in, as the driver's own isolation does), undone after `limit_s`."""
    return (
        {"subnet": {"resourceType": "aws:ec2:subnet", "resourceArns": [subnet_arn], "selectionMode": "ALL"}},
        {
            "fault": {
                "actionId": DISRUPT_CONNECTIVITY,
                "parameters": {"duration": duration(limit_s), "scope": "all"},
                "targets": {"Subnets": "subnet"},
            }
        },
    )


def start(fis, request: dict) -> tuple[str, int]:
    """Create the template and start its experiment: (the experiment's id, when its fault took
    effect in ms) once every action runs. That time is FIS's: the latest of its actions' start
    times, which come 30 s or more after the request (FIS's start-up). A failed start raises
    RuntimeError with FIS's reason."""
    tid = fis.create_experiment_template(**request)["experimentTemplate"]["id"]
    exp = fis.start_experiment(clientToken=request["clientToken"], experimentTemplateId=tid, tags=request["tags"])[
        "experiment"
    ]["id"]
    e = _wait(fis, exp, lambda e: e["state"]["status"] in ENDED or acted_ms(e) is not None)
    if e["state"]["status"] != "running":
        raise RuntimeError(f"FIS experiment {exp} {e['state']['status']}: {e['state'].get('reason', '')}")
    return exp, acted_ms(e)


def acted_ms(experiment: dict) -> int | None:
    """When a running experiment's last action started (GetExperiment's actions' startTime), in
    ms; None while the experiment or any action has not started."""
    actions = (experiment.get("actions") or {}).values()
    if experiment["state"]["status"] != "running" or not actions or not all(a.get("startTime") for a in actions):
        return None
    return max(round(a["startTime"].timestamp() * 1000) for a in actions)


def end(fis, token: str) -> None:
    """Heal's half: stop every experiment of the fault's templates (FIS undoes each fault at once),
    wait for them to end, and delete the templates. Each step is a no-op when already done."""
    for tid in _templates(fis, token):
        for exp in _experiments(fis, tid):
            if exp["state"]["status"] not in ENDED:
                fis.stop_experiment(id=exp["id"])
            _wait(fis, exp["id"], lambda e: e["state"]["status"] in ENDED)
        fis.delete_experiment_template(id=tid)


def _templates(fis, token: str) -> list[str]:
    pages = fis.get_paginator("list_experiment_templates").paginate()
    return [t["id"] for page in pages for t in page["experimentTemplates"] if t.get("tags", {}).get(FAULT_TAG) == token]


def _experiments(fis, template_id: str) -> list[dict]:
    pages = fis.get_paginator("list_experiments").paginate(experimentTemplateId=template_id)
    return [e for page in pages for e in page["experiments"]]


def _wait(fis, exp: str, done) -> dict:
    """The experiment as FIS last described it, once `done` holds for it."""
    deadline = time.monotonic() + WAIT_S
    while True:
        e = fis.get_experiment(id=exp)["experiment"]
        if done(e):
            return e
        if time.monotonic() > deadline:
            raise TimeoutError(f"FIS experiment {exp} still {e['state']['status']} after {WAIT_S:.0f} s")
        time.sleep(POLL_S)
