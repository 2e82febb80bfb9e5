"""The AWS Pulumi program (infra/aws/program.py) run under pulumi.runtime mocks: what the tests of
its components (hosts, network, security groups) read the resources from."""

import pulumi

from dcdrill.infra import stack
from dcdrill.infra.aws import program

WORLD = "0.0.0.0/0"
ACCOUNT = "123456789012"


class Mocks(pulumi.runtime.Mocks):
    def __init__(self):
        self.resources = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs):
        outs = dict(args.inputs)
        if args.typ == "aws:ec2/instance:Instance":
            outs["privateIp"] = f"10.0.0.{len(self.resources) % 250}"
        if args.typ == "aws:route53/zone:Zone":
            outs["zoneId"] = "Z123"
        if args.typ == "aws:s3/bucket:Bucket":
            outs["bucket"] = "stack-bucket"
        if args.typ == "aws:iam/role:Role":
            outs["arn"] = f"arn:aws:iam::{ACCOUNT}:role/{args.name}-0a1b2c3"
        if args.typ == "aws:iam/policy:Policy":
            outs["arn"] = f"arn:aws:iam::{ACCOUNT}:policy/{args.name}-0a1b2c3"
        self.resources.append(args)
        return [f"{args.name}-id", outs]

    def call(self, args: pulumi.runtime.MockCallArgs):
        if args.token == "aws:ec2/getAmi:getAmi":
            return {"id": "ami-0123"}
        if args.token == "aws:index/getAvailabilityZone:getAvailabilityZone":
            return {"name": args.args["name"], "zoneId": "az-" + args.args["name"]}
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {"accountId": ACCOUNT, "arn": f"arn:aws:iam::{ACCOUNT}:user/ci", "userId": "AIDA0"}
        return {}

    def of(self, typ):
        return [r for r in self.resources if r.typ == typ]


def run_program(stack_name, config_patch=None, whole=False):
    """The program under mocks: (mocks, the home cluster, its inventory), or with whole=True
    (mocks, the Deployment, every stack output)."""
    mocks = Mocks()
    pulumi.runtime.set_mocks(mocks, project="dcdrill", stack=stack_name, preview=False)
    config = {**stack.load_config(stack_name), **(config_patch or {})}
    d = stack.deployment_of(config, stack_name)
    result = {}

    @pulumi.runtime.test
    def go():
        return program.build(d, config).apply(lambda outs: result.update(outs))

    go()
    return (mocks, d, result) if whole else (mocks, d.home, result["inventory"])
