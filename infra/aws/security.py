"""Security groups per role and region, least privilege:
ZooKeeper client/quorum/election only from brokers and ZooKeeper peers; REPLICATION only
between brokers; CLIENT only from the configured client CIDRs. Other regions are reached by
their VPC CIDRs (security groups cannot be referenced across regions). Nothing is world-open."""
from __future__ import annotations

from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from dcdrill.infra.ports import CLIENT_PORT, CONTROLLER_PORT, MIRROR_REST_PORT, REPLICATION_PORT, ZOOKEEPER_PORTS



@dataclass
class SecurityArgs:
    cluster: str
    vpc_id: pulumi.Input[str]
    other_region_cidrs: list[str]
    client_cidrs: list[str]
    provider: aws.Provider
    mirrors: bool = False  # a replicated stack: a group for MirrorMaker 2 hosts
    # The VPCs of other regions holding MirrorMaker 2 hosts, which read and write every
    # cluster's CLIENT listener (MM2 in this region is let in by its security group).
    mirror_cidrs: list[str] = field(default_factory=list)


class ClusterSecurity(pulumi.ComponentResource):
    def __init__(self, name: str, args: SecurityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:aws:ClusterSecurity", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        egress = [aws.ec2.SecurityGroupEgressArgs(protocol="-1", from_port=0, to_port=0, cidr_blocks=["0.0.0.0/0"])]
        self.zookeeper = aws.ec2.SecurityGroup(f"{name}-zookeeper", vpc_id=args.vpc_id, egress=egress,
                                               description="dcdrill ZooKeeper", tags={"cluster": args.cluster,
                                                                                      "role": "zookeeper"}, opts=child)
        self.broker = aws.ec2.SecurityGroup(f"{name}-broker", vpc_id=args.vpc_id, egress=egress,
                                            description="dcdrill Kafka broker", tags={"cluster": args.cluster,
                                                                                      "role": "kafka_broker"}, opts=child)
        self.controller = aws.ec2.SecurityGroup(f"{name}-controller", vpc_id=args.vpc_id, egress=egress,
                                                description="dcdrill KRaft controller",
                                                tags={"cluster": args.cluster, "role": "kafka_controller"}, opts=child)
        self.client = aws.ec2.SecurityGroup(f"{name}-client", vpc_id=args.vpc_id, egress=egress,
                                            description="dcdrill drill clients", tags={"cluster": args.cluster,
                                                                                       "role": "client"}, opts=child)
        self.mirror = aws.ec2.SecurityGroup(f"{name}-mirror", vpc_id=args.vpc_id, egress=egress,
                                            description="dcdrill MirrorMaker 2", tags={"cluster": args.cluster,
                                                                                      "role": "kafka_mirror"},
                                            opts=child) if args.mirrors else None

        def rule(rname: str, sg, port: int, source_sg=None, cidrs=None, what: str = ""):
            aws.ec2.SecurityGroupRule(rname, type="ingress", security_group_id=sg.id, protocol="tcp",
                                      from_port=port, to_port=port, source_security_group_id=source_sg,
                                      cidr_blocks=cidrs, description=what, opts=child)

        for port in ZOOKEEPER_PORTS:
            rule(f"{name}-zk{port}-from-brokers", self.zookeeper, port, self.broker.id, what="brokers")
            rule(f"{name}-zk{port}-from-peers", self.zookeeper, port, self.zookeeper.id, what="ZooKeeper peers")
            if args.other_region_cidrs:
                rule(f"{name}-zk{port}-other-regions", self.zookeeper, port, cidrs=args.other_region_cidrs,
                     what="brokers and peers in other regions")
        # KRaft: the controller quorum's port, from brokers and the other controllers only.
        rule(f"{name}-controller-from-brokers", self.controller, CONTROLLER_PORT, self.broker.id, what="brokers")
        rule(f"{name}-controller-from-peers", self.controller, CONTROLLER_PORT, self.controller.id,
             what="controller peers")
        if args.other_region_cidrs:
            rule(f"{name}-controller-other-regions", self.controller, CONTROLLER_PORT, cidrs=args.other_region_cidrs,
                 what="brokers and controllers in other regions")
        rule(f"{name}-replication", self.broker, REPLICATION_PORT, self.broker.id, what="brokers")
        if args.other_region_cidrs:
            rule(f"{name}-replication-other-regions", self.broker, REPLICATION_PORT, cidrs=args.other_region_cidrs,
                 what="brokers in other regions")
        rule(f"{name}-client", self.broker, CLIENT_PORT, cidrs=args.client_cidrs, what="clients")
        rule(f"{name}-client-from-drill", self.broker, CLIENT_PORT, self.client.id, what="drill clients")
        if self.mirror is not None:
            rule(f"{name}-client-from-mirror", self.broker, CLIENT_PORT, self.mirror.id, what="MirrorMaker 2")
            # KIP-710: MM2 nodes of one mirror forward task configs to their leader (same DC).
            rule(f"{name}-mirror-rest", self.mirror, MIRROR_REST_PORT, self.mirror.id, what="MirrorMaker 2 peers")
        if args.mirror_cidrs:
            rule(f"{name}-client-mirror-regions", self.broker, CLIENT_PORT, cidrs=args.mirror_cidrs,
                 what="MirrorMaker 2 in other regions")
        self.register_outputs({})
