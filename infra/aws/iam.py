"""The stack's two IAM policies, rendered from JSON templates whose conditions name `${stackTag}`
(the stack's STACK_TAG value, infra/aws/plan.py):

- fault-driver-policy.json: the fault driver's (the role your CI assumes). Every write it allows
  is on a resource carrying the stack's tag: instances, the VPCs, the stack's own network ACLs,
  the isolation ACLs the driver makes and the FIS templates and experiments it starts (tagged at
  creation), so no other stack's is reachable, even one whose `cluster` tag is the same. It may
  pass exactly one role, `${fisRoleArn}`, and only to FIS, and keeps fault states in `${bucket}`,
  the stack's own bucket, only.
- fis-role-policy.json: that role's, which AWS Fault Injection Service assumes to stop and start
  the stack's instances and to cut its subnets with ACLs FIS tags `managedByFIS`.
"""

from __future__ import annotations

import json
from pathlib import Path

FAULT_DRIVER = Path(__file__).with_name("fault-driver-policy.json")
FIS_ROLE = Path(__file__).with_name("fis-role-policy.json")
PLACEHOLDER = "${stackTag}"
FIS_ROLE_PLACEHOLDER = "${fisRoleArn}"
BUCKET_PLACEHOLDER = "${bucket}"
ACCOUNT_PLACEHOLDER = "${account}"  # the FIS role's account: the stack's
FIS_SERVICE = "fis.amazonaws.com"


def _render(template: Path, values: dict[str, str]) -> dict:
    def fill(value):
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, list):
            return [fill(v) for v in value]
        if isinstance(value, str):
            for key, v in values.items():
                value = value.replace(key, v)
        return value

    return fill(json.loads(template.read_text()))


def fault_driver_policy(stack_tag: str, fis_role_arn: str, bucket: str) -> dict:
    return _render(
        FAULT_DRIVER,
        {
            PLACEHOLDER: stack_tag,
            FIS_ROLE_PLACEHOLDER: fis_role_arn,
            BUCKET_PLACEHOLDER: bucket,
            ACCOUNT_PLACEHOLDER: fis_role_arn.split(":")[4],
        },
    )


def fis_role_policy(stack_tag: str) -> dict:
    return _render(FIS_ROLE, {PLACEHOLDER: stack_tag})


def fis_trust_policy(account_id: str) -> dict:
    """Only FIS may assume the role, and only for experiments of this account (the confused-deputy guard)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": FIS_SERVICE},
                "Action": "sts:AssumeRole",
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            }
        ],
    }
