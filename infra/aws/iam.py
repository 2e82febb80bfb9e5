"""The fault driver's IAM policy for one stack: fault-driver-policy.json, whose conditions name
`${stackTag}`, rendered with the stack's STACK_TAG value (infra/aws/plan.py). Every write it
allows is on a resource carrying that tag: instances, the VPCs, the stack's own network ACLs and
the isolation ACLs the driver makes (tagged at creation), so no other stack's is reachable, even
one whose `cluster` tag is the same."""
from __future__ import annotations

import json
from pathlib import Path

TEMPLATE = Path(__file__).with_name("fault-driver-policy.json")
PLACEHOLDER = "${stackTag}"


def fault_driver_policy(stack_tag: str) -> dict:
    def fill(value):
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v) for v in value]
        return value.replace(PLACEHOLDER, stack_tag) if isinstance(value, str) else value

    return fill(json.loads(TEMPLATE.read_text()))
