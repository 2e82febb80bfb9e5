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


class AwsBackend(Backend):
    name = "aws"
    default_domain = "dcdrill.internal"

    def __init__(self, config: dict):
        self.config = config  # `dcdrill:aws`, read against the topology's regions (plan.settings)

    def check(self, t: Topology) -> list[Violation]:
        return plan.check(t, self.config)

    def inventory(self, t: Topology) -> Inventory:
        return plan.inventory(t, self.config)

    def check_deployment(self, d: Deployment) -> list[Violation]:
        return plan.check(d, self.config)  # every cluster's DCs at once: they share the regions' VPCs

    def program(self, d: Deployment) -> dict:
        from dcdrill.infra.aws import program

        outputs = program.build(d, self.config)
        keys = ["inventory"] + (["inventories", "mirrors"] if d.replicated else [])
        return {key: outputs.apply(lambda o, key=key: o[key]) for key in keys}
