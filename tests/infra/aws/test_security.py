"""The security groups (infra/aws/security.py), from the program under Pulumi's mocks: the flow
table and nothing more, and no coordination or replication port open to the world."""

import pytest

from dcdrill.infra import stack
from dcdrill.infra.aws import plan
from tests.infra.aws.program_mocks import WORLD, run_program


@pytest.mark.parametrize("name", ["aws-3az-tiebreaker", "aws-2region-tiebreaker", "aws-3az-kraft"])
def test_zookeeper_and_replication_ports_are_never_world_open(name):
    mocks, _, _ = run_program(name)
    rules = mocks.of("aws:ec2/securityGroupRule:SecurityGroupRule")
    assert rules
    for r in rules:
        assert r.inputs["type"] == "ingress"
        assert WORLD not in (r.inputs.get("cidrBlocks") or [])
        if r.inputs["fromPort"] in (2181, 2888, 3888, 9093, 9094):
            assert r.inputs.get("sourceSecurityGroupId") or all(c.startswith("10.") for c in r.inputs["cidrBlocks"]), (
                r.inputs
            )
    for sg in mocks.of("aws:ec2/securityGroup:SecurityGroup"):
        assert not sg.inputs.get("ingress")


@pytest.mark.parametrize(
    "name", ["aws-3az-tiebreaker", "aws-2region-tiebreaker", "aws-3az-kraft", "aws-2region-replicated"]
)
def test_the_security_groups_are_the_flow_table(name):
    """Every ingress rule is a flow of infra/flows.py's table (a CIDR source stands for the roles
    of the regions it covers), and every flow whose target has a host is rendered."""
    from dcdrill.infra import flows

    mocks, d, _ = run_program(name, whole=True)
    s = plan.settings(d, stack.load_config(name))
    held = {}  # region -> roles with hosts there
    for h in d.hosts():
        held.setdefault(d.dc(h.dc).region, set()).add(h.role)
    group_of = {}  # group id -> (region, role)
    for g in mocks.of("aws:ec2/securityGroup:SecurityGroup"):
        if "role" in g.inputs["tags"]:  # not the VPC endpoints' own (infra/aws/network.py)
            role = g.inputs["tags"]["role"]
            group_of[f"{g.name}-id"] = (g.name[len("sg-") : -len(role) - 1], role)
    region_of_cidr = {cidr: r for r, cidr in s.vpc_cidrs.items()}
    rendered = set()
    for r in mocks.of("aws:ec2/securityGroupRule:SecurityGroupRule"):
        if r.inputs["securityGroupId"] not in group_of:
            continue
        region, target = group_of[r.inputs["securityGroupId"]]
        port = r.inputs["fromPort"]
        if r.inputs.get("sourceSecurityGroupId"):
            sources = {group_of[r.inputs["sourceSecurityGroupId"]][1]}
        elif r.inputs["cidrBlocks"] == s.client_cidrs and "clientCidrs" in r.inputs["description"]:
            sources = {flows.CLIENT_NETWORKS}
        else:
            sources = {role for c in r.inputs["cidrBlocks"] for role in held[region_of_cidr[c]]}
        keys = {(src, target, port) for src in sources} & {f.key for f in flows.table(d)}
        assert keys, (r.name, sources, target, port)  # a rule no flow asks for
        rendered |= keys
    wanted = {
        f.key
        for f in flows.table(d)
        if any(f.target in roles for roles in held.values()) and (f.source != flows.CLIENT_NETWORKS or s.client_cidrs)
    }
    assert rendered == wanted, (sorted(wanted - rendered), sorted(rendered - wanted))
