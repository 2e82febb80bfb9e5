"""Which of a stack's EC2 hosts the SSM service cannot reach yet: every host access goes through an
SSM session (infra/aws/ssm_tunnel.py), which opens only once the instance's agent has registered
and is online, a minute or more after `pulumi up` reports the instance made."""

from __future__ import annotations

from dcdrill.infra.aws.account import Client
from dcdrill.infra.inventory import Inventory

FILTER_VALUES_MAX = 50  # DescribeInstanceInformation takes at most this many ids per filter


def unregistered(inventory: Inventory, client: Client) -> list[str]:
    """The inventory's hosts whose instance (ansible_host) SSM does not list as Online, sorted."""
    by_region: dict[str, dict[str, str]] = {}  # region -> {instance id: host name}
    for h in inventory.hosts():
        by_region.setdefault(h.vars["aws_region"], {})[h.address] = h.name
    missing = []
    for region, hosts in sorted(by_region.items()):
        ids, online = sorted(hosts), set()
        pages = client("ssm", region).get_paginator("describe_instance_information")
        for i in range(0, len(ids), FILTER_VALUES_MAX):
            chunk = ids[i : i + FILTER_VALUES_MAX]
            for page in pages.paginate(Filters=[{"Key": "InstanceIds", "Values": chunk}]):
                online |= {x["InstanceId"] for x in page["InstanceInformationList"] if x.get("PingStatus") == "Online"}
        missing += [hosts[i] for i in ids if i not in online]
    return sorted(missing)
