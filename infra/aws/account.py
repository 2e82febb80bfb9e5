"""The account's side of an AWS stack, read before a drill (`dcdrill drill --check`, once the
control has credentials): the EC2 vCPU quota against the stack's instances, AWS FIS's
service-linked role, and the SSM endpoints in every zone the stack uses. Read-only calls: a
check never creates, changes or deletes anything in the account."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from dcdrill.infra.aws import plan
from dcdrill.infra.deployment import Deployment

# "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", counted in vCPUs per region.
VCPU_QUOTA = ("ec2", "L-1216C47A")
STANDARD_FAMILIES = frozenset("acdhimrtz")
FIS_ROLE = "AWSServiceRoleForFIS"
# What the SSM agent and a session need in the VPC (infra/aws/network.py makes their endpoints).
SSM_SERVICES = ("ssm", "ssmmessages", "ec2messages")

Client = Callable[[str, str], object]  # (service, region) -> a boto3 client


class Unread(str):
    """A check that could not read what it needs (no permission, a service AWS does not offer
    there, no answer): said as a warning, since it proves nothing missing."""


def instances(d: Deployment, config: dict) -> dict[str, Counter]:
    """{region: Counter(instance type)}: every instance the stack runs (as infra/aws/program.py does)."""
    s = plan.settings(d, config)
    out: dict[str, Counter] = {}
    for h in d.hosts():
        region = d.cluster_of_dc(h.dc).dc(h.dc).region
        out.setdefault(region, Counter())[plan.instance_type(s, h.role)] += 1
    return out


def zones(d: Deployment) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for dc in d.datacenters:
        out.setdefault(dc.region, []).append(dc.zone)
    return out


def _aws_error(e: Exception) -> dict:
    """botocore's {Code, Message} of a refused call; empty for any other failure."""
    return getattr(e, "response", {}).get("Error", {})


def _error(e: Exception) -> str:
    error = _aws_error(e)
    return f"{error['Code']}: {error.get('Message', '')}" if error.get("Code") else f"{type(e).__name__}: {e}"


def vcpu_problems(region: str, types: Counter, client: Client) -> list[str]:
    standard = {t: n for t, n in types.items() if t.split(".")[0][0] in STANDARD_FAMILIES}
    if not standard:
        return []
    try:
        described = client("ec2", region).describe_instance_types(InstanceTypes=sorted(standard))["InstanceTypes"]
    except Exception as e:  # noqa: BLE001 - any refusal is said, the check goes on
        return [Unread(f"{region}: the instance types {', '.join(sorted(standard))} could not be read ({_error(e)})")]
    vcpus = {t["InstanceType"]: t["VCpuInfo"]["DefaultVCpus"] for t in described}
    if unknown := sorted(set(standard) - set(vcpus)):
        return [f"{region}: instance type {', '.join(unknown)} is not offered there"]
    needed = sum(vcpus[t] * n for t, n in standard.items())
    try:
        quota = client("service-quotas", region).get_service_quota(ServiceCode=VCPU_QUOTA[0], QuotaCode=VCPU_QUOTA[1])
    except Exception as e:  # noqa: BLE001 - any refusal is said, the check goes on
        return [Unread(f"{region}: the EC2 vCPU quota ({VCPU_QUOTA[1]}) could not be read ({_error(e)})")]
    value = int(quota["Quota"]["Value"])
    if needed > value:
        return [
            f"{region}: the stack's instances need {needed} vCPUs of On-Demand Standard instances and the "
            f"account's quota ({VCPU_QUOTA[1]}) is {value}: ask for more in Service Quotas"
        ]
    return []


def fis_role_problems(client: Client, region: str) -> list[str]:
    try:
        client("iam", region).get_role(RoleName=FIS_ROLE)
    except Exception as e:  # noqa: BLE001
        if _aws_error(e).get("Code") == "NoSuchEntity":
            return []  # the fault driver creates it at its first experiment (iam:CreateServiceLinkedRole)
        return [Unread(f"IAM: role {FIS_ROLE} could not be read ({_error(e)})")]
    return []


def endpoint_problems(region: str, zones_used: list[str], client: Client) -> list[str]:
    names = [f"com.amazonaws.{region}.{s}" for s in SSM_SERVICES]
    try:
        found = client("ec2", region).describe_vpc_endpoint_services(ServiceNames=names)["ServiceDetails"]
    except Exception as e:  # noqa: BLE001
        return [Unread(f"{region}: the SSM endpoint services could not be read ({_error(e)})")]
    offered = {d["ServiceName"]: set(d.get("AvailabilityZones") or ()) for d in found}
    out = []
    for name in names:
        if name not in offered:
            out.append(f"{region}: endpoint service {name} is not offered")
        elif missing := sorted(set(zones_used) - offered[name]):
            out.append(f"{region}: endpoint service {name} is not offered in {', '.join(missing)}")
    return out


def findings(d: Deployment, config: dict, client: Client) -> list[str]:
    """What the account lacks for this stack, one sentence each (Unread: what could not be
    read); empty when nothing."""
    out = []
    by_zone = zones(d)
    for region, types in instances(d, config).items():
        out += vcpu_problems(region, types, client)
        out += endpoint_problems(region, by_zone[region], client)
    return out + fis_role_problems(client, plan.regions(d)[0])


def boto3_client(service: str, region: str):
    """A client with short waits: an account that does not answer is named in seconds, not minutes."""
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2, "mode": "standard"})
    return boto3.client(service, region_name=region, config=config)
