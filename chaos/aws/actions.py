"""AWS faults through boto3, targeting instances and subnets by the tags infra/aws sets
(`cluster`, `dc`, `role`). Isolation swaps the DC's subnets onto a deny-all network ACL and
records every association it replaced, so heal restores exactly that and nothing else.

Configuration: `aws_region` (default: the DC's region from the stack), plus the usual stack/run_dir.
"""
from __future__ import annotations

from chaos import drill

__all__ = ["kill_dc", "stop_dc", "isolate_dc", "heal_dc"]

ROLES = ("kafka_broker", "zookeeper")


def _ec2(configuration, dc: str):
    import boto3

    region = (configuration or {}).get("aws_region")
    if not region:
        region = drill.topology(configuration).dc(dc).region
    return boto3.client("ec2", region_name=region), region


def _cluster(configuration) -> str:
    return (configuration or {}).get("cluster") or drill.topology(configuration).name


def _instances(ec2, cluster: str, dc: str) -> list[str]:
    pages = ec2.get_paginator("describe_instances").paginate(Filters=[
        {"Name": "tag:cluster", "Values": [cluster]}, {"Name": "tag:dc", "Values": [dc]},
        {"Name": "tag:role", "Values": list(ROLES)}, {"Name": "instance-state-name", "Values": ["running", "pending"]}])
    return sorted(i["InstanceId"] for page in pages for r in page["Reservations"] for i in r["Instances"])


def _stop(dc: str, force: bool, fault: str, configuration: dict) -> dict:
    drill.check_dc(configuration, dc)
    ec2, region = _ec2(configuration, dc)
    ids = _instances(ec2, _cluster(configuration), dc)
    if not ids:
        raise RuntimeError(f"{fault} {dc}: no running instance tagged cluster={_cluster(configuration)}, dc={dc}")
    entry = drill.record_start(configuration, fault, dc, {"start": ids, "region": region})
    ec2.stop_instances(InstanceIds=ids, Force=force)
    return {**entry, "instances": ids}


def kill_dc(dc: str, configuration: dict = None, secrets: dict = None) -> dict:
    """Power loss: force-stop every broker and ZooKeeper instance of the DC."""
    return _stop(dc, True, "kill-dc", configuration)


def stop_dc(dc: str, configuration: dict = None, secrets: dict = None) -> dict:
    """Clean stop (the OS shuts the services down) of every broker and ZooKeeper instance of the DC."""
    return _stop(dc, False, "stop-dc", configuration)


def isolate_dc(dc: str, configuration: dict = None, secrets: dict = None) -> dict:
    """Swap each of the DC's subnets onto a new deny-all network ACL (both directions)."""
    drill.check_dc(configuration, dc)
    ec2, region = _ec2(configuration, dc)
    subnets = ec2.describe_subnets(Filters=[{"Name": "tag:cluster", "Values": [_cluster(configuration)]},
                                            {"Name": "tag:dc", "Values": [dc]}])["Subnets"]
    if not subnets:
        raise RuntimeError(f"isolate-dc {dc}: no subnet tagged cluster={_cluster(configuration)}, dc={dc}")
    swaps = []
    entry = drill.record_start(configuration, "isolate-dc", dc, {"region": region, "swaps": swaps})
    deny_by_vpc: dict[str, str] = {}
    try:
        _swap_all(ec2, dc, subnets, swaps, deny_by_vpc)
    finally:  # whatever was swapped, even halfway, is in the state heal reads
        with drill.fault_state(configuration) as state:
            state["active"][-1]["undo"]["swaps"] = swaps
    return {**entry, "swaps": swaps}


def _swap_all(ec2, dc: str, subnets: list, swaps: list, deny_by_vpc: dict) -> None:
    for sn in subnets:
        vpc = sn["VpcId"]
        if vpc not in deny_by_vpc:  # a new NACL has only the implicit deny-all rules
            acl = ec2.create_network_acl(VpcId=vpc, TagSpecifications=[{"ResourceType": "network-acl", "Tags": [
                {"Key": "Name", "Value": f"dcdrill-isolate-{dc}"}, {"Key": "dcdrill", "Value": "isolation"}]}])
            deny_by_vpc[vpc] = acl["NetworkAcl"]["NetworkAclId"]
        current = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [sn["SubnetId"]]}])
        acl = current["NetworkAcls"][0]
        assoc = next(a for a in acl["Associations"] if a["SubnetId"] == sn["SubnetId"])
        new = ec2.replace_network_acl_association(AssociationId=assoc["NetworkAclAssociationId"],
                                                  NetworkAclId=deny_by_vpc[vpc])
        swaps.append({"subnet": sn["SubnetId"], "original_acl": acl["NetworkAclId"],
                      "association": new["NewAssociationId"], "deny_acl": deny_by_vpc[vpc]})


def _undo(undo: dict, configuration: dict) -> None:
    import boto3

    ec2 = boto3.client("ec2", region_name=undo["region"])
    if undo.get("start"):
        ec2.start_instances(InstanceIds=undo["start"])
    for swap in undo.get("swaps") or []:
        ec2.replace_network_acl_association(AssociationId=swap["association"], NetworkAclId=swap["original_acl"])
    for acl in sorted({s["deny_acl"] for s in undo.get("swaps") or []}):
        ec2.delete_network_acl(NetworkAclId=acl)


def heal_dc(dc: str = None, configuration: dict = None, secrets: dict = None) -> dict:
    """Start what was stopped and put every swapped subnet back on its original ACL."""
    return drill.heal(configuration, dc, _undo)
