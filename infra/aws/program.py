"""The AWS stack: per-region providers and networks, peering between regions, one private
zone over every VPC, security groups per role, and a host per topology host."""
from __future__ import annotations

import pulumi
import pulumi_aws as aws

from infra.aws import plan
from infra.aws.hosts import ClusterHost, HostArgs, SsmProfile
from infra.aws.network import Peering, PeeringArgs, RegionNetwork, RegionNetworkArgs
from infra.aws.security import ClusterSecurity, SecurityArgs
from infra.topology import Topology

# Amazon Linux 2023: the SSM agent is installed, and its package repositories are in S3, which
# the hosts reach through the VPC's gateway endpoint (no NAT, no internet route).
AMI_OWNER, AMI_NAME = "amazon", "al2023-ami-2023.*-x86_64"


class TransferBucket(pulumi.ComponentResource):
    """The bucket Ansible's SSM connection moves files through (key stores and JAAS files among
    them): never public, encrypted at rest, and emptied with the stack."""

    def __init__(self, name: str, cluster: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:aws:TransferBucket", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.bucket = aws.s3.Bucket(f"{name}", force_destroy=True, tags={"cluster": cluster}, opts=child)
        aws.s3.BucketPublicAccessBlock(f"{name}-private", bucket=self.bucket.id, block_public_acls=True,
                                       block_public_policy=True, ignore_public_acls=True,
                                       restrict_public_buckets=True, opts=child)
        aws.s3.BucketServerSideEncryptionConfiguration(f"{name}-encrypted", bucket=self.bucket.id, rules=[
            aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                apply_server_side_encryption_by_default=aws.s3
                .BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs(
                    sse_algorithm="aws:kms"), bucket_key_enabled=True)], opts=child)
        self.register_outputs({"bucket": self.bucket.bucket})


def build(t: Topology, config: dict) -> pulumi.Output:
    problems = plan.check(t, config)
    if problems:  # before any resource is registered
        raise pulumi.RunError("; ".join(f"[{v.rule}] {v.message}" for v in problems))
    s = plan.settings(t, config)
    subnets = plan.subnet_cidrs(t, s)
    providers = {r: aws.Provider(f"aws-{r}", region=r) for r in plan.regions(t)}
    nets = {r: RegionNetwork(f"net-{r}", RegionNetworkArgs(
        cluster=t.name, region=r, cidr=s.vpc_cidrs[r],
        subnets={dc.name: (dc.zone, subnets[dc.name]) for dc in t.datacenters if dc.region == r},
        provider=providers[r])) for r in plan.regions(t)}
    regions = plan.regions(t)
    for i, a in enumerate(regions):
        for b in regions[i + 1:]:
            Peering(f"peer-{a}-{b}", PeeringArgs(requester=nets[a], accepter=nets[b], accepter_region=b,
                                                 requester_provider=providers[a], accepter_provider=providers[b]))
    home = regions[0]
    zone = aws.route53.Zone("private-zone", name=t.domain, comment=f"dcdrill {t.name}",
                            vpcs=[aws.route53.ZoneVpcArgs(vpc_id=nets[r].vpc.id, vpc_region=r) for r in regions],
                            opts=pulumi.ResourceOptions(provider=providers[home]))
    security = {r: ClusterSecurity(f"sg-{r}", SecurityArgs(
        cluster=t.name, vpc_id=nets[r].vpc.id, other_region_cidrs=[s.vpc_cidrs[o] for o in regions if o != r],
        client_cidrs=s.client_cidrs, provider=providers[r])) for r in regions}
    ssm = SsmProfile("ssm", t.name, pulumi.ResourceOptions(provider=providers[home]))
    bucket = TransferBucket("ssm-transfer", t.name, pulumi.ResourceOptions(provider=providers[home]))
    amis = {r: s.ami.get(r) or aws.ec2.get_ami_output(
        most_recent=True, owners=[AMI_OWNER],
        filters=[aws.ec2.GetAmiFilterArgs(name="name", values=[AMI_NAME])],
        opts=pulumi.InvokeOutputOptions(provider=providers[r])).id for r in regions}
    ids = {}
    for h in t.hosts():
        dc = t.dc(h.dc)
        sg = security[dc.region]
        group = {"zookeeper": sg.zookeeper, "kafka_controller": sg.controller, "kafka_broker": sg.broker,
                 "client": sg.client}[h.role]
        az_id = aws.get_availability_zone_output(name=dc.zone, opts=pulumi.InvokeOutputOptions(
            provider=providers[dc.region])).zone_id
        host = ClusterHost(f"host-{h.short}", HostArgs(
            cluster=t.name, fqdn=h.name, role=h.role, dc=h.dc, node_id=h.node_id, zone=dc.zone, az_id=az_id,
            subnet_id=nets[dc.region].subnets[h.dc].id, security_group_ids=[group.id],
            instance_type={"kafka_broker": s.broker_instance_type}.get(h.role, s.zookeeper_instance_type),
            ami=amis[dc.region], data_volume_gb=s.data_volume_gb, instance_profile=ssm.profile.name,
            zone_id=zone.zone_id, provider=providers[dc.region]))
        ids[h.name] = host.instance.id
    names = list(ids)
    dcs = [dc.name for dc in t.datacenters]
    subnet_ids = [nets[t.dc(dc).region].subnets[dc].id for dc in dcs]
    return pulumi.Output.all(bucket.bucket.bucket, *ids.values(), *subnet_ids).apply(
        lambda vals: plan.inventory(t, config, dict(zip(names, vals[1:1 + len(names)])), bucket=vals[0],
                                    subnet_ids=dict(zip(dcs, vals[1 + len(names):]))).data)
