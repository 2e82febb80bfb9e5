"""Per-region network: a VPC, one private subnet per DC (AZ) with its route table, the VPC
endpoints that let private hosts reach SSM and S3 with no internet route (SSM's in subnets of
their own, which no fault cuts), and inter-region VPC peering with routes both ways."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

INTERFACE_ENDPOINTS = ("ssm", "ssmmessages", "ec2messages")


@dataclass
class RegionNetworkArgs:
    cluster: str
    region: str
    cidr: str
    subnets: dict[str, tuple[str, str, str]]  # dc -> (zone, cidr, the cluster the DC belongs to)
    endpoint_subnets: dict[str, str]  # zone -> cidr (plan.endpoint_subnet_cidrs)
    provider: aws.Provider


class RegionNetwork(pulumi.ComponentResource):
    def __init__(self, name: str, args: RegionNetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:aws:RegionNetwork", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        tags = {"cluster": args.cluster, "region": args.region}
        self.cidr = args.cidr
        self.vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=args.cidr,
            enable_dns_support=True,
            enable_dns_hostnames=True,
            tags={**tags, "Name": f"{args.cluster}-{args.region}"},
            opts=child,
        )
        # One route table for the region's private subnets: peering routes are added to it.
        self.route_table = aws.ec2.RouteTable(f"{name}-private", vpc_id=self.vpc.id, tags=tags, opts=child)
        self.subnets: dict[str, aws.ec2.Subnet] = {}
        for dc, (zone, cidr, cluster) in sorted(args.subnets.items()):
            # the subnet's own cluster: the fault driver checks a DC's subnet is its cluster's
            sn = aws.ec2.Subnet(
                f"{name}-{dc}",
                vpc_id=self.vpc.id,
                cidr_block=cidr,
                availability_zone=zone,
                map_public_ip_on_launch=False,
                tags={**tags, "cluster": cluster, "dc": dc, "Name": f"{cluster}-{dc}"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-{dc}", subnet_id=sn.id, route_table_id=self.route_table.id, opts=child
            )
            self.subnets[dc] = sn
        # The subnets' own ACL, open both ways (the security groups are the policy): the VPC's
        # default ACL carries no tag of the stack, and an isolation's heal swaps back to this one,
        # which the fault driver's policy may touch only because it does (infra/aws/iam.py).
        open_rule = {
            "protocol": "-1",
            "rule_no": 100,
            "action": "allow",
            "cidr_block": "0.0.0.0/0",
            "from_port": 0,
            "to_port": 0,
        }
        self.acl = aws.ec2.NetworkAcl(
            f"{name}-open",
            vpc_id=self.vpc.id,
            subnet_ids=[sn.id for sn in self.subnets.values()],
            ingress=[aws.ec2.NetworkAclIngressArgs(**open_rule)],
            egress=[aws.ec2.NetworkAclEgressArgs(**open_rule)],
            tags={**tags, "Name": f"{args.cluster}-{args.region}-open"},
            opts=child,
        )
        self._endpoints(name, args, tags, child)
        self.register_outputs({"vpc_id": self.vpc.id})

    def _endpoints(self, name: str, args: RegionNetworkArgs, tags: dict, child: pulumi.ResourceOptions) -> None:
        """No NAT and no internet gateway: SSM (how Ansible and the fault driver reach the hosts)
        through interface endpoints, S3 (Ansible's file transfer bucket, and Amazon Linux's
        package repositories) through a gateway endpoint on the private route table."""
        https = aws.ec2.SecurityGroup(
            f"{name}-endpoints",
            vpc_id=self.vpc.id,
            description="HTTPS from the VPC to AWS endpoints",
            tags=tags,
            opts=child,
        )
        aws.ec2.SecurityGroupRule(
            f"{name}-endpoints-https",
            type="ingress",
            security_group_id=https.id,
            protocol="tcp",
            from_port=443,
            to_port=443,
            cidr_blocks=[args.cidr],
            opts=child,
        )
        # An interface endpoint takes one subnet a zone, and a host's session may ride any zone's
        # interface: in a DC's subnet, a cut of that DC (its ACL, FIS's disrupt-connectivity)
        # would break the other DCs' sessions too. Their own subnets carry no `dc` tag, so no
        # fault names them; the VPC's default ACL, open, is theirs.
        self.endpoint_subnets = {
            zone: aws.ec2.Subnet(
                f"{name}-endpoints-{zone}",
                vpc_id=self.vpc.id,
                cidr_block=cidr,
                availability_zone=zone,
                map_public_ip_on_launch=False,
                tags={**tags, "Name": f"{args.cluster}-endpoints-{zone}"},
                opts=child,
            )
            for zone, cidr in sorted(args.endpoint_subnets.items())
        }
        for service in INTERFACE_ENDPOINTS:
            aws.ec2.VpcEndpoint(
                f"{name}-{service}",
                vpc_id=self.vpc.id,
                vpc_endpoint_type="Interface",
                service_name=f"com.amazonaws.{args.region}.{service}",
                private_dns_enabled=True,
                subnet_ids=[sn.id for sn in self.endpoint_subnets.values()],
                security_group_ids=[https.id],
                tags={**tags, "Name": f"{args.cluster}-{service}"},
                opts=child,
            )
        aws.ec2.VpcEndpoint(
            f"{name}-s3",
            vpc_id=self.vpc.id,
            vpc_endpoint_type="Gateway",
            service_name=f"com.amazonaws.{args.region}.s3",
            route_table_ids=[self.route_table.id],
            tags={**tags, "Name": f"{args.cluster}-s3"},
            opts=child,
        )


@dataclass
class PeeringArgs:
    requester: RegionNetwork
    accepter: RegionNetwork
    accepter_region: str
    requester_provider: aws.Provider
    accepter_provider: aws.Provider


class Peering(pulumi.ComponentResource):
    """Inter-region peering (security groups cannot reference across regions: CIDRs are used)."""

    def __init__(self, name: str, args: PeeringArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:aws:Peering", name, None, opts)
        req = pulumi.ResourceOptions(parent=self, provider=args.requester_provider)
        acc = pulumi.ResourceOptions(parent=self, provider=args.accepter_provider)
        self.connection = aws.ec2.VpcPeeringConnection(
            f"{name}-pcx",
            vpc_id=args.requester.vpc.id,
            peer_vpc_id=args.accepter.vpc.id,
            peer_region=args.accepter_region,
            auto_accept=False,
            opts=req,
        )
        accepted = aws.ec2.VpcPeeringConnectionAccepter(
            f"{name}-accept", vpc_peering_connection_id=self.connection.id, auto_accept=True, opts=acc
        )
        aws.ec2.Route(
            f"{name}-to-peer",
            route_table_id=args.requester.route_table.id,
            destination_cidr_block=args.accepter.cidr,
            vpc_peering_connection_id=self.connection.id,
            opts=pulumi.ResourceOptions.merge(req, pulumi.ResourceOptions(depends_on=[accepted])),
        )
        aws.ec2.Route(
            f"{name}-from-peer",
            route_table_id=args.accepter.route_table.id,
            destination_cidr_block=args.requester.cidr,
            vpc_peering_connection_id=self.connection.id,
            opts=pulumi.ResourceOptions.merge(acc, pulumi.ResourceOptions(depends_on=[accepted])),
        )
        self.register_outputs({"peering_id": self.connection.id})
