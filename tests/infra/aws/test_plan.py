"""An AWS stack's plan (infra/aws/plan.py), offline: a VPC per region with its defaults, a /20 per
DC carved in order, and the SSM endpoints' subnets in a block of their own that no DC owns."""

import ipaddress

from dcdrill.infra import stack
from dcdrill.infra.aws import plan


def test_each_region_gets_a_vpc_and_each_dc_a_subnet_of_its_own_inside_it():
    d = stack.load_deployment("aws-2region-tiebreaker")
    s = plan.settings(d, stack.load_config("aws-2region-tiebreaker"))
    assert list(s.vpc_cidrs) == plan.regions(d) and len(set(s.vpc_cidrs.values())) == len(s.vpc_cidrs)
    subnets = plan.subnet_cidrs(d, s)
    assert set(subnets) == set(d.dc_names)
    for dc in d.datacenters:
        net = ipaddress.ip_network(subnets[dc.name])
        assert net.prefixlen == plan.SUBNET_PREFIX and net.subnet_of(ipaddress.ip_network(s.vpc_cidrs[dc.region]))
    nets = [ipaddress.ip_network(c) for c in subnets.values()]
    assert not any(a.overlaps(b) for i, a in enumerate(nets) for b in nets[i + 1 :])


def test_the_ssm_endpoints_subnets_are_outside_every_dcs():
    d = stack.load_deployment("aws-3az-tiebreaker")
    s = plan.settings(d, stack.load_config("aws-3az-tiebreaker"))
    dcs = [ipaddress.ip_network(c) for c in plan.subnet_cidrs(d, s).values()]
    [(region, zones)] = plan.endpoint_subnet_cidrs(d, s).items()
    assert set(zones) == {dc.zone for dc in d.datacenters if dc.region == region}
    for cidr in zones.values():
        net = ipaddress.ip_network(cidr)
        assert net.prefixlen == plan.ENDPOINT_PREFIX and not any(net.overlaps(dc) for dc in dcs)
        assert net.subnet_of(ipaddress.ip_network(s.vpc_cidrs[region]))
