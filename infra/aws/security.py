"""Security groups per role and region, rendered from the stack's flow table (infra/flows.py):
one ingress rule per flow, from the source role's group in the same region, and from the VPC
CIDRs of the other regions that hold the source role (security groups cannot be referenced across
regions). The stack's own clients come in by `clientCidrs`. Nothing else is open, nothing is
world-open."""

from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from dcdrill.infra.flows import CLIENT_NETWORKS, Flow

DESCRIPTIONS = {
    "zookeeper": "dcdrill ZooKeeper",
    "kafka_controller": "dcdrill KRaft controller",
    "kafka_broker": "dcdrill Kafka broker",
    "client": "dcdrill drill clients",
    "kafka_mirror": "dcdrill MirrorMaker 2",
}


@dataclass
class SecurityArgs:
    cluster: str
    vpc_id: pulumi.Input[str]
    flows: list[Flow]  # infra/flows.py table(d)
    roles: list[str]  # the roles with hosts in this region: a group each
    client_cidrs: list[str]
    provider: aws.Provider
    # role -> the VPC CIDRs of the other regions that hold it
    elsewhere: dict[str, list[str]] = field(default_factory=dict)


class ClusterSecurity(pulumi.ComponentResource):
    def __init__(self, name: str, args: SecurityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:aws:ClusterSecurity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        egress = [aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"])]
        self.groups = {
            role: aws.ec2.SecurityGroup(
                f"{name}-{role}",
                vpc_id=args.vpc_id,
                egress=egress,
                description=DESCRIPTIONS[role],
                tags={"cluster": args.cluster, "role": role},
                opts=child,
            )
            for role in sorted(args.roles)
        }

        def rule(rname: str, target, port: int, why: str, source=None, cidrs=None):
            aws.ec2.SecurityGroupRule(
                rname,
                type="ingress",
                security_group_id=target.id,
                protocol="tcp",
                from_port=port,
                to_port=port,
                source_security_group_id=source,
                cidr_blocks=cidrs,
                description=why,
                opts=child,
            )

        for f in args.flows:
            target = self.groups.get(f.target)
            if target is None:  # no host of the target role in this region
                continue
            rname = f"{name}-{f.source}-to-{f.target}-{f.port}"
            if f.source == CLIENT_NETWORKS:
                if args.client_cidrs:
                    rule(rname, target, f.port, f.why, cidrs=args.client_cidrs)
                continue
            if f.source in self.groups:
                rule(rname, target, f.port, f.why, source=self.groups[f.source].id)
            if args.elsewhere.get(f.source):
                rule(
                    f"{rname}-other-regions", target, f.port, f"{f.why} (other regions)", cidrs=args.elsewhere[f.source]
                )
        self.register_outputs({})
