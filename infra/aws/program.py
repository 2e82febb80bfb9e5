"""The AWS stack: per-region providers and networks, peering between regions, one private
zone over every VPC, security groups per role, and a host per topology host (every cluster's,
and MirrorMaker 2's on a replicated stack)."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

from dcdrill.infra import flows
from dcdrill.infra.aws import iam, plan
from dcdrill.infra.aws.hosts import ClusterHost, HostArgs, SsmProfile
from dcdrill.infra.aws.network import Peering, PeeringArgs, RegionNetwork, RegionNetworkArgs
from dcdrill.infra.aws.security import ClusterSecurity, SecurityArgs
from dcdrill.infra.deployment import Deployment

# Amazon Linux 2023: the SSM agent is installed, and its package repositories are in S3, which
# the hosts reach through the VPC's gateway endpoint (no NAT, no internet route).
AMI_OWNER, AMI_NAME = "amazon", "al2023-ami-2023.*-x86_64"


KMS_BY_DEFAULT = aws.s3.BucketServerSideEncryptionConfigurationRuleApplyServerSideEncryptionByDefaultArgs


class StackBucket(pulumi.ComponentResource):
    """The stack's bucket, where a drill keeps a copy of each fault's undo (so a heal from another
    runner finds it): never public, encrypted at rest, and emptied with the stack. Files to and
    from hosts go over SSH, as on the lab, not through it."""

    def __init__(self, name: str, cluster: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:aws:StackBucket", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.bucket = aws.s3.Bucket(f"{name}", force_destroy=True, tags={"cluster": cluster}, opts=child)
        aws.s3.BucketPublicAccessBlock(
            f"{name}-private",
            bucket=self.bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=child,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-encrypted",
            bucket=self.bucket.id,
            rules=[
                aws.s3.BucketServerSideEncryptionConfigurationRuleArgs(
                    apply_server_side_encryption_by_default=KMS_BY_DEFAULT(sse_algorithm="aws:kms"),
                    bucket_key_enabled=True,
                )
            ],
            opts=child,
        )
        self.register_outputs({"bucket": self.bucket.bucket})


class FaultInjectionRole(pulumi.ComponentResource):
    """The role AWS Fault Injection Service assumes to run the stack's stop-dc and isolate-dc
    (chaos/faults/aws_fis.py): it may stop and start only this stack's instances and cut only its
    subnets. FIS undoes each fault itself when its time is up, so a lost runner leaves nothing
    broken for long."""

    def __init__(self, name: str, stack_tag: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:aws:FaultInjectionRole", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        account = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        self.role = aws.iam.Role(
            name,
            description=f"AWS FIS, for dcdrill stack {stack_tag} only",
            assume_role_policy=account.apply(lambda a: json.dumps(iam.fis_trust_policy(a))),
            opts=child,
        )
        aws.iam.RolePolicy(
            f"{name}-policy",
            role=self.role.id,
            policy=json.dumps(iam.fis_role_policy(stack_tag), sort_keys=True),
            opts=child,
        )
        self.register_outputs({"arn": self.role.arn})


class FaultDriverPolicy(pulumi.ComponentResource):
    """The IAM policy the fault driver's role needs for this stack and no other. Its ARN is the
    stack output `faultDriverPolicyArn`. With `role` (dcdrill:aws.faultDriverRole) the stack
    attaches it there itself, so destroy detaches it first: a policy attached by hand would stop
    `pulumi destroy` (AWS deletes no attached policy)."""

    def __init__(
        self,
        name: str,
        stack_tag: str,
        fis_role_arn: pulumi.Input[str],
        bucket: pulumi.Input[str],
        role: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("dcdrill:aws:FaultDriverPolicy", name, None, opts)
        policy = pulumi.Output.all(fis_role_arn, bucket).apply(
            lambda v: json.dumps(iam.fault_driver_policy(stack_tag, v[0], v[1]), sort_keys=True)
        )
        self.policy = aws.iam.Policy(
            name,
            description=f"dcdrill's fault driver, for stack {stack_tag} only",
            policy=policy,
            opts=pulumi.ResourceOptions(parent=self),
        )
        if role:
            aws.iam.RolePolicyAttachment(
                f"{name}-attachment", role=role, policy_arn=self.policy.arn, opts=pulumi.ResourceOptions(parent=self)
            )
        pulumi.export("faultDriverPolicyArn", self.policy.arn)
        self.register_outputs({"arn": self.policy.arn})


def build(d: Deployment, config: dict) -> pulumi.Output:
    """Every cluster's hosts and the MirrorMaker 2 hosts (a replicated stack's clusters share each
    region's VPC, one subnet per DC). Returns the stack outputs (plan.inventories), once known."""
    problems = plan.check(d, config)
    if problems:  # before any resource is registered
        raise pulumi.RunError("; ".join(f"[{v.rule}] {v.message}" for v in problems))
    s = plan.settings(d, config)
    subnets, endpoints = plan.subnet_cidrs(d, s), plan.endpoint_subnet_cidrs(d, s)
    regions = plan.regions(d)
    # Every resource carries the stack's tag (the providers' default tags): the fault driver's
    # policy (infra/aws/iam.py) lets it touch only what carries its own stack's.
    stack_tag = f"{pulumi.get_project()}/{pulumi.get_stack()}"
    providers = {
        r: aws.Provider(
            f"aws-{r}", region=r, default_tags=aws.ProviderDefaultTagsArgs(tags={plan.STACK_TAG: stack_tag})
        )
        for r in regions
    }
    nets = {
        r: RegionNetwork(
            f"net-{r}",
            RegionNetworkArgs(
                cluster=d.name,
                region=r,
                cidr=s.vpc_cidrs[r],
                subnets={
                    dc.name: (dc.zone, subnets[dc.name], d.cluster_of_dc(dc.name).name)
                    for dc in d.datacenters
                    if dc.region == r
                },
                endpoint_subnets=endpoints[r],
                provider=providers[r],
            ),
        )
        for r in regions
    }
    for i, a in enumerate(regions):
        for b in regions[i + 1 :]:
            Peering(
                f"peer-{a}-{b}",
                PeeringArgs(
                    requester=nets[a],
                    accepter=nets[b],
                    accepter_region=b,
                    requester_provider=providers[a],
                    accepter_provider=providers[b],
                ),
            )
    home = regions[0]
    zone_opts = pulumi.ResourceOptions(provider=providers[home])
    # One private zone per DNS domain, over every VPC: MM2 and the drill's clients resolve every cluster.
    zones = {
        c.domain: aws.route53.Zone(
            "private-zone" if i == 0 else f"private-zone-{c.domain}",
            name=c.domain,
            comment=f"dcdrill {d.name}",
            vpcs=[aws.route53.ZoneVpcArgs(vpc_id=nets[r].vpc.id, vpc_region=r) for r in regions],
            opts=zone_opts,
        )
        for i, c in enumerate({c.domain: c for c in d.clusters}.values())
    }
    # One network policy (infra/flows.py): each region's groups and rules rendered from it.
    flow_table = flows.table(d)
    held = {r: sorted({h.role for h in d.hosts() if d.dc(h.dc).region == r}) for r in regions}
    security = {
        r: ClusterSecurity(
            f"sg-{r}",
            SecurityArgs(
                cluster=d.name,
                vpc_id=nets[r].vpc.id,
                flows=flow_table,
                roles=held[r],
                client_cidrs=s.client_cidrs,
                provider=providers[r],
                elsewhere={
                    role: [s.vpc_cidrs[o] for o in regions if o != r and role in held[o]] for role in flows.roles(d)
                },
            ),
        )
        for r in regions
    }
    ssm = SsmProfile("ssm", d.name, pulumi.ResourceOptions(provider=providers[home]))
    fis = FaultInjectionRole("fis-role", stack_tag, pulumi.ResourceOptions(provider=providers[home]))
    bucket = StackBucket("stack-bucket", d.name, pulumi.ResourceOptions(provider=providers[home]))
    FaultDriverPolicy(
        "fault-driver",
        stack_tag,
        fis.role.arn,
        bucket.bucket.bucket,
        s.fault_driver_role,
        pulumi.ResourceOptions(provider=providers[home]),
    )
    amis = {
        r: s.ami.get(r)
        or aws.ec2.get_ami_output(
            most_recent=True,
            owners=[AMI_OWNER],
            filters=[aws.ec2.GetAmiFilterArgs(name="name", values=[AMI_NAME])],
            opts=pulumi.InvokeOutputOptions(provider=providers[r]),
        ).id
        for r in regions
    }
    ids = {}
    for h in d.hosts():
        cluster = d.cluster_of_dc(h.dc)
        dc = cluster.dc(h.dc)
        group = security[dc.region].groups[h.role]
        az_id = aws.get_availability_zone_output(
            name=dc.zone, opts=pulumi.InvokeOutputOptions(provider=providers[dc.region])
        ).zone_id
        host = ClusterHost(
            f"host-{h.short}",
            HostArgs(
                cluster=cluster.name,
                fqdn=h.name,
                role=h.role,
                dc=h.dc,
                node_id=h.node_id,
                zone=dc.zone,
                az_id=az_id,
                subnet_id=nets[dc.region].subnets[h.dc].id,
                security_group_ids=[group.id],
                instance_type=plan.instance_type(s, h.role),
                ami=amis[dc.region],
                data_volume_gb=s.data_volume_gb,
                keep_data_volumes=s.keep_data_volumes,
                instance_profile=ssm.profile.name,
                zone_id=zones[cluster.domain].zone_id,
                provider=providers[dc.region],
            ),
        )
        ids[h.name] = host.instance.id
    names = list(ids)
    dcs = [dc.name for dc in d.datacenters]
    subnet_ids = [nets[d.dc(dc).region].subnets[dc].id for dc in dcs]
    return pulumi.Output.all(bucket.bucket.bucket, fis.role.arn, *ids.values(), *subnet_ids).apply(
        lambda vals: plan.inventories(
            d,
            config,
            dict(zip(names, vals[2 : 2 + len(names)])),
            bucket=vals[0],
            subnet_ids=dict(zip(dcs, vals[2 + len(names) :])),
            stack_tag=stack_tag,
            fis_role=vals[1],
        )
    )
