"""AWS layout as pure data (no Pulumi import): VPC CIDRs per region, a subnet per DC, the
checks that must pass before any resource is registered, and the inventory shape.

`dcdrill:aws` stack config (all optional; infra/schema.py AwsSpec checks each):
  vpcCidrs:   {region: cidr}          default 10.(20+i).0.0/16 for the i-th region; private,
                                      a /16, or narrower while it holds a /20 a DC plus one (SSM endpoints)
  clientCidrs: [cidr, ...]            who may reach the CLIENT listener (default: the cluster's VPCs);
                                      a public range must be /16 or narrower
  brokerInstanceType / zookeeperInstanceType   default m6i.large / t3.medium (KRaft controllers too)
  dataVolumeGb                        gp3 data volume per host, default 100
  keepDataVolumes                     keep the data volumes after `pulumi destroy`, default false
  ami: {region: ami-id}               default: the newest Amazon Linux 2023 image per region at the
                                      first `up`, kept after that (instances ignore later AMI changes)
  faultDriverRole                     the IAM role (its name) the drill runs as: the stack attaches its
                                      fault-driver policy to it, and detaches it on destroy
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from dcdrill.infra import inventory as inv
from dcdrill.infra import schema
from dcdrill.infra.constants import KAFKA_VERSIONS, LOGIN_USER
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.rules import Violation
from dcdrill.infra.topology import Topology

# A topology's DCs and hosts: one cluster, or a replicated stack's clusters and MM2 hosts, which
# share the region's VPC (each DC keeps a subnet of its own).
Layout = Topology | Deployment


SUBNET_PREFIX = 20  # one /20 per DC
MIN_PUBLIC_PREFIX = 16  # the widest public range clientCidrs may open the CLIENT listener to
MIRROR_HEAP_MB = 2048  # MirrorMaker 2 on the broker instance type


@dataclass(frozen=True)
class AwsSettings:
    vpc_cidrs: dict[str, str]
    client_cidrs: list[str]
    broker_instance_type: str
    zookeeper_instance_type: str
    data_volume_gb: int
    keep_data_volumes: bool
    ami: dict[str, str]
    fault_driver_role: str | None = None


def regions(t: Layout) -> list[str]:
    out: list[str] = []
    for dc in t.datacenters:
        if dc.region and dc.region not in out:
            out.append(dc.region)
    return out


def settings(t: Layout, config: dict) -> AwsSettings:
    """`dcdrill:aws` (validated by infra/schema.py) with its defaults filled in per region."""
    raw = schema.parse(config).aws or schema.AwsSpec()
    cidrs = {r: raw.vpc_cidrs.get(r, f"10.{20 + i}.0.0/16") for i, r in enumerate(regions(t))}
    return AwsSettings(
        vpc_cidrs=cidrs,
        client_cidrs=list(raw.client_cidrs or cidrs.values()),
        broker_instance_type=raw.broker_instance_type,
        zookeeper_instance_type=raw.zookeeper_instance_type,
        data_volume_gb=raw.data_volume_gb,
        keep_data_volumes=raw.keep_data_volumes,
        ami=dict(raw.ami),
        fault_driver_role=raw.fault_driver_role,
    )


def instance_type(s: AwsSettings, role: str) -> str:
    """A host's instance type: MM2 is a Kafka client and producer at the brokers' rate, so it gets theirs."""
    return s.broker_instance_type if role in ("kafka_broker", "kafka_mirror") else s.zookeeper_instance_type


def check(t: Layout, config: dict) -> list[Violation]:
    """AWS-specific refusals: a DC without region/zone, a zone outside its region, overlapping VPCs.
    On a replicated stack, over every cluster's DCs at once: they share each region's VPC."""
    out = []
    for dc in t.datacenters:
        if not dc.region or not dc.zone:
            out.append(Violation("aws-zone-missing", f"{dc.name} needs region: and zone: on the aws backend"))
        elif not (dc.zone.startswith(dc.region) and len(dc.zone) == len(dc.region) + 1 and dc.zone[-1].isalpha()):
            out.append(Violation("aws-zone-region", f"{dc.name}: zone {dc.zone} is not in region {dc.region}"))
    zones: dict[str, str] = {}
    for dc in t.datacenters:
        if dc.zone and dc.zone in zones:
            out.append(
                Violation(
                    "aws-zone-shared",
                    f"{dc.name} and {zones[dc.zone]} are both in {dc.zone}: a DC is an "
                    "AZ, and losing one must not take another (or another cluster)",
                )
            )
        zones.setdefault(dc.zone, dc.name)
    if out:
        return out
    s = settings(t, config)
    nets = {r: ipaddress.ip_network(c) for r, c in s.vpc_cidrs.items()}
    rs = sorted(nets)
    for i, a in enumerate(rs):
        for b in rs[i + 1 :]:
            if nets[a].overlaps(nets[b]):
                out.append(Violation("aws-cidr-overlap", f"VPC CIDRs overlap: {a} {nets[a]} and {b} {nets[b]}"))
    for r, net in nets.items():
        dcs = sum(1 for dc in t.datacenters if dc.region == r)
        if (
            not any(net.subnet_of(p) for p in schema.PRIVATE_NETS)
            or not 16 <= net.prefixlen <= SUBNET_PREFIX - dcs.bit_length()
        ):
            out.append(
                Violation(
                    "aws-vpc-size",
                    f"dcdrill:aws.vpcCidrs.{r}: {net} must be a private /16 to "
                    f"/{SUBNET_PREFIX - dcs.bit_length()}, to hold a /{SUBNET_PREFIX} "
                    f"for each of its {dcs} DCs and one for the SSM endpoints",
                )
            )
    unused = sorted(set((schema.parse(config).aws or schema.AwsSpec()).vpc_cidrs) - set(regions(t)))
    if unused:
        out.append(Violation("aws-vpc-region", f"dcdrill:aws.vpcCidrs names regions no DC is in: {', '.join(unused)}"))
    for i, cidr in enumerate(s.client_cidrs):
        net = ipaddress.ip_network(cidr)
        if not any(net.subnet_of(p) for p in schema.PRIVATE_NETS) and net.prefixlen < MIN_PUBLIC_PREFIX:
            # Checked per CIDR, so 0.0.0.0/1 plus 128.0.0.0/1 is refused twice, not summed to pass.
            out.append(
                Violation(
                    "aws-world-open",
                    f"dcdrill:aws.clientCidrs[{i}]: {cidr} opens the CLIENT listener "
                    f"to {net.num_addresses:,} public addresses; public ranges must "
                    f"be /{MIN_PUBLIC_PREFIX} or narrower",
                )
            )
    return out


def subnet_cidrs(t: Layout, s: AwsSettings) -> dict[str, str]:
    """One private /20 per DC, carved in config order from its region's VPC."""
    out, used = {}, {}
    for dc in t.datacenters:
        subnets = list(ipaddress.ip_network(s.vpc_cidrs[dc.region]).subnets(new_prefix=SUBNET_PREFIX))
        i = used.get(dc.region, 0)
        out[dc.name] = str(subnets[i])
        used[dc.region] = i + 1
    return out


ENDPOINT_PREFIX = 24  # an endpoints subnet a zone, carved from the /20 after the region's DCs'


def endpoint_subnet_cidrs(t: Layout, s: AwsSettings) -> dict[str, dict[str, str]]:
    """{region: {zone: cidr}}: the SSM endpoints' subnets, one for each zone the region's DCs use,
    in the /20 after theirs. No DC owns them, so no fault on a DC cuts them."""
    out: dict[str, dict[str, str]] = {}
    for r in regions(t):
        dcs = [dc for dc in t.datacenters if dc.region == r]
        block = list(ipaddress.ip_network(s.vpc_cidrs[r]).subnets(new_prefix=SUBNET_PREFIX))[len(dcs)]
        zones = sorted({dc.zone for dc in dcs})
        out[r] = dict(zip(zones, map(str, block.subnets(new_prefix=ENDPOINT_PREFIX))))
    return out


# Ansible and host access reach EC2 hosts as on the lab: ssh as the unprivileged login user, who
# `become`s root. ansible_host is the instance id, which only the connection understands: ssh's
# ProxyCommand opens an SSM session to the host's own sshd (infra/aws/ssm_tunnel.py; the
# control adds it, and its key, when it writes the inventory). No port is open to anyone for it.
CONNECTION = {"ansible_connection": "ssh", "ansible_user": LOGIN_USER, "ansible_python_interpreter": "/usr/bin/python3"}


AGENT_DIR = "/var/lib/dcdrill/agent"  # a client host's Python for dcdrill's agents (roles/dcdrill_agent)


def connection_vars(region: str) -> dict:
    """A host's own: the region its tunnel is opened in."""
    return {"aws_region": region}


def inventory(
    t: Topology,
    config: dict,
    instance_ids: dict[str, str] | None = None,
    bucket: str = "<stack-bucket>",
    subnet_ids: dict[str, str] | None = None,
    stack: Deployment | None = None,
    stack_tag: str | None = None,
    fis_role: str | None = None,
) -> inv.Inventory:
    """One cluster's, in the same schema as the lab's; offline (`dcdrill plan`) instance and subnet
    ids are placeholders. The fault driver (chaos/faults/aws.py) acts on exactly these ids: the
    instances (ansible_host) and subnets (aws_subnet_ids) this stack's own Pulumi program made;
    on a replicated `stack`, aws_subnet_ids and aws_regions name every cluster's DCs."""
    whole = stack or t
    ids = instance_ids or _placeholder_ids(whole)
    host_vars = {
        h.name: {
            **connection_vars(t.dc(h.dc).region),
            "az": t.dc(h.dc).zone,
            **({"dcdrill_agent_dir": AGENT_DIR} if h.role == "client" else {}),
        }
        for h in t.hosts()
    }
    extra = {
        **_shared(whole, bucket, subnet_ids, stack_tag, fis_role),
        "kafka_broker_heap_mb": 4096,
        "zookeeper_heap_mb": 1024,
    }
    if stack is not None and stack.replicated:
        extra["kafka_broker_custom_properties"] = dict(inv.REPLICATED_BROKER_PROPERTIES)
    return inv.build(t, ids, CONNECTION, extra, host_vars)


def mirror_inventory(
    d: Deployment,
    config: dict,
    instance_ids: dict[str, str] | None = None,
    bucket: str = "<stack-bucket>",
    subnet_ids: dict[str, str] | None = None,
    stack_tag: str | None = None,
    fis_role: str | None = None,
) -> inv.Inventory:
    """The MirrorMaker 2 hosts', on the newest Kafka the stack's clusters run (Deployment.mirror_kafka_version)."""
    ids = instance_ids or _placeholder_ids(d)
    hosts = [h for h, _ in d.mirror_hosts()]
    host_vars = {h.name: {**connection_vars(d.dc(h.dc).region), "az": d.dc(h.dc).zone} for h in hosts}
    extra = {
        **_shared(d, bucket, subnet_ids, stack_tag, fis_role),
        "java_kafka_libs_folder": KAFKA_VERSIONS[d.mirror_kafka_version],
        "kafka_mirror_heap_mb": MIRROR_HEAP_MB,
    }
    return inv.build_mirrors(d, ids, CONNECTION, extra, host_vars)


def inventories(
    d: Deployment,
    config: dict,
    instance_ids: dict[str, str] | None = None,
    bucket: str = "<stack-bucket>",
    subnet_ids: dict[str, str] | None = None,
    stack_tag: str | None = None,
    fis_role: str | None = None,
) -> dict:
    """The stack outputs, as the lab's (infra/lab/layout.build_inventories): `inventory` (the home
    cluster's), and on a replicated stack `inventories` (by cluster) and `mirrors`. `stack_tag`:
    the STACK_TAG value every resource of the stack carries; `fis_role`: the ARN of the role FIS
    assumes for the stack's faults (program.FaultInjectionRole)."""
    if not d.replicated:
        return {
            "inventory": inventory(
                d.home, config, instance_ids, bucket, subnet_ids, stack_tag=stack_tag, fis_role=fis_role
            ).data
        }
    each = {
        c.name: inventory(c, config, instance_ids, bucket, subnet_ids, d, stack_tag, fis_role).data for c in d.clusters
    }
    return {
        "inventory": each[d.home.name],
        "inventories": each,
        "mirrors": mirror_inventory(d, config, instance_ids, bucket, subnet_ids, stack_tag, fis_role).data,
    }


def _placeholder_ids(t: Layout) -> dict[str, str]:
    return {h.name: f"<instance-id of {h.name}>" for h in t.hosts()}


# Every resource of an AWS stack carries this tag (the providers' default tags), valued
# "<project>/<stack>": unique per stack where `cluster` is not (four example stacks are `main`).
# The fault driver checks it, and its IAM policy (infra/aws/iam.py) is conditioned on it.
STACK_TAG = "dcdrill-stack"


def _shared(
    t: Layout, bucket: str, subnet_ids: dict[str, str] | None, stack_tag: str | None = None, fis_role: str | None = None
) -> dict:
    subnets = subnet_ids or {dc.name: f"<subnet-id of {dc.name}>" for dc in t.datacenters}
    return {
        "service_manager": "systemd",
        "kafka_libs_dir": "/opt/kafka/libs",
        "data_root": "/var/lib/dcdrill",
        "aws_bucket": bucket,
        "aws_subnet_ids": dict(sorted(subnets.items())),
        "aws_regions": {dc.name: dc.region for dc in t.datacenters},
        "aws_fis_role_arn": fis_role or "<arn of the stack's FIS role>",
        **({"aws_stack_tag": stack_tag} if stack_tag else {}),
    }
