"""The AWS backend: a VPC per region, a subnet per DC (AZ), EC2 hosts reached through SSM
(infra/aws/program.py), for one stretched cluster or replicated clusters with MirrorMaker 2;
its settings, checks and inventory shape are in infra/aws/plan.py."""

from __future__ import annotations

from dcdrill.infra.aws import plan
from dcdrill.infra.backend import Backend
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.rules import Violation
from dcdrill.infra.topology import Topology

# The experiment's `aws` secrets boto3 takes as a client's credentials (any left empty: boto3's own
# chain, environment, profile or instance role).
CREDENTIALS = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")


def given_credentials(secrets: dict | None) -> dict:
    return {k: v for k, v in (secrets or {}).items() if k in CREDENTIALS and v}


class AwsBackend(Backend):
    name = "aws"
    default_domain = "dcdrill.internal"

    def __init__(self, config: dict):
        self.config = config  # `dcdrill:aws`, read against the topology's regions (plan.settings)

    def check(self, t: Topology) -> list[Violation]:
        return plan.check(t, self.config)

    registry = "SSM"

    def unregistered(self, inventory: Inventory) -> list[str]:
        from dcdrill.infra.aws import account, ssm_registration

        return ssm_registration.unregistered(inventory, account.boto3_client)

    def account_findings(self, d: Deployment) -> list[str]:
        """What the account lacks for the stack, and what could not be read of it (account.Unread):
        infra/aws/account.py, read-only calls made with the control's credentials."""
        from dcdrill.infra.aws import account

        return account.findings(d, self.config, account.boto3_client)

    def require_support(self) -> None:
        from dcdrill.infra.aws import prerequisites

        if lacking := prerequisites.missing():
            raise ValueError("this machine cannot drive an AWS stack yet; missing: " + "; ".join(lacking))

    def inventory(self, t: Topology) -> Inventory:
        return plan.inventory(t, self.config)

    def check_deployment(self, d: Deployment) -> list[Violation]:
        return plan.check(d, self.config)  # every cluster's DCs at once: they share the regions' VPCs

    # Fault-state copies in the stack's bucket (infra/aws/program.py, the home region),
    # under one prefix; the fault driver's policy may read and write only there.
    KEPT_PREFIX = "dcdrill/fault-states/"

    @staticmethod
    def _bucket(inventory: Inventory, credentials: dict | None):
        import boto3

        av = inventory.vars
        home = next(iter(av["aws_regions"].values()))  # the bucket's region (infra/aws/program.py)
        return boto3.client("s3", region_name=home, **given_credentials(credentials)), av["aws_bucket"]

    def keep_fault_state(self, inventory: Inventory, key: str, state: dict, credentials: dict | None = None) -> None:
        import json

        s3, bucket = self._bucket(inventory, credentials)
        if state.get("active"):
            s3.put_object(
                Bucket=bucket,
                Key=f"{self.KEPT_PREFIX}{key}.json",
                Body=json.dumps(state, indent=2, sort_keys=True).encode(),
            )
        else:
            s3.delete_object(Bucket=bucket, Key=f"{self.KEPT_PREFIX}{key}.json")

    def kept_fault_states(self, inventory: Inventory, credentials: dict | None = None) -> dict[str, dict]:

        s3, bucket = self._bucket(inventory, credentials)
        out = {}
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=self.KEPT_PREFIX):
            for obj in page.get("Contents", []):
                body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
                state = self.parse_kept(f"s3://{bucket}/{obj['Key']}", body)
                if state.get("active"):
                    out[obj["Key"][len(self.KEPT_PREFIX) :].removesuffix(".json")] = state
        return out

    def program(self, d: Deployment) -> dict:
        from dcdrill.infra.aws import program

        outputs = program.build(d, self.config)
        keys = ["inventory"] + (["inventories", "mirrors"] if d.replicated else [])
        return {key: outputs.apply(lambda o, key=key: o[key]) for key in keys}
