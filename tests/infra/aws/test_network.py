"""The stack's networks (infra/aws/network.py), from the program under Pulumi's mocks: VPCs of
several regions peered, with routes both ways."""

from tests.infra.aws.program_mocks import run_program


def test_two_regions_are_peered_with_routes_both_ways():
    mocks, t, _ = run_program("aws-2region-tiebreaker")
    assert len(mocks.of("aws:ec2/vpcPeeringConnection:VpcPeeringConnection")) == 3  # 3 regions, pairwise
    routes = mocks.of("aws:ec2/route:Route")
    assert len(routes) == 6
    assert {r.inputs["destinationCidrBlock"] for r in routes} == {"10.20.0.0/16", "10.21.0.0/16", "10.22.0.0/16"}
    mocks, _, _ = run_program("aws-3az")
    assert not mocks.of("aws:ec2/vpcPeeringConnection:VpcPeeringConnection")
